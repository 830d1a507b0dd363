"""The actor's side of ``TurnHost``: each call of the turn loop becomes a committed decision.

Every method that changes the thread waits for room in the store writer first, then asks
the core and submits its unit with no checkpoint in between (the rule of ``actor.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from echsd.approval_rules import ApprovalRules, ApprovalSettings
from echsd.events import AccountRateLimits, EventData, ToolOutput
from echsd.codex import ModelError, RateLimits, ResponsesClient, Usage
from echsd.logs import get_logger
from echsd.threads.compactor import compact_head
from echsd.settings import Tuning
from echsd.store import Unit
from echsd.ids import new_approval_id
from echsd.threads.account import AccountLimits
from echsd.threads.activity import Activity
from echsd.threads.approvals import ApprovalBook, PendingApproval
from echsd.threads.config import ConfigRules, ThreadConfig
from echsd.threads.core import ThreadCore
from echsd.threads.effects import USAGE_KEYS, Effects
from echsd.threads.eventlog import ThreadLog
from echsd.tools.base import ToolContext
from echsd.tools.capabilities import ThreadCapabilities
from echsd.tools.process import sandbox_runtime
from echsd.tools.registry import ToolRegistry
from echsd.tools.truncate import printable


log = get_logger(__name__)


@dataclass(eq=False)
class ActorTurnHost:
    core: ThreadCore
    log: ThreadLog
    commit: Callable[[Effects], Unit]
    turn_id: str
    client: ResponsesClient
    tuning: Tuning
    tools: ToolRegistry
    caps: ThreadCapabilities
    approvals: ApprovalBook
    limits: AccountLimits
    activity: Activity = field(default_factory=Activity)
    approval: ApprovalSettings = ApprovalSettings()
    partial: list[str] = field(default_factory=list)
    streamed_output_bytes: int = 0  # tool output sent as tool.output events this turn (budget + 1: no more)

    @property
    def thread_id(self) -> str:
        return self.core.thread_id

    @property
    def config(self) -> ThreadConfig:
        return self.core.config

    @property
    def parent(self) -> str | None:
        return self.core.parent

    @property
    def history(self) -> Sequence[dict[str, Any]]:
        assert self.core.history is not None
        return self.core.history

    @property
    def autorun(self) -> dict[str, Any] | None:
        turn = self.core.turn
        return self.core.extra.get("autorun") if turn is not None and turn.autorun else None

    async def emit(self, kind: type[EventData], data: dict[str, Any]) -> None:
        await self.log.ready()
        self.log.emit_one(kind, data)

    async def append_items(self, items: Sequence[dict[str, Any]], before: Sequence[tuple[type[EventData], dict[str, Any]]] = ()) -> None:
        await self.log.ready()
        self.commit(self.core.append_items(items, before))

    async def deliver_steers(self) -> None:
        if not self.core.has_steers:
            return
        await self.log.ready()
        effects = self.core.deliver_steers()
        if effects is not None:
            self.commit(effects)

    def settle(self) -> bool:
        return self.core.settle()

    def add_usage(self, usage: Usage) -> None:
        counts = {key: getattr(usage, key) for key in USAGE_KEYS}
        cost = self.client.catalog.estimate_cost(
            self.core.config.model, input_tokens=usage.input_tokens, cached_tokens=usage.cached_tokens, output_tokens=usage.output_tokens
        )
        self.core.add_usage(counts, cost)

    def context_tokens(self) -> int:
        return self.core.context_tokens()

    async def fit_window(self, target: int) -> bool:
        await self.log.ready()
        effects = self.core.fit_history(target)
        if effects is None:
            return False
        self.commit(effects)
        return True

    def context_full(self) -> bool:
        return self.core.context_tokens() >= self.client.catalog.get(self.core.config.model).compact_at

    async def compact(self, reason: str) -> bool:
        planned = self.core.begin_turn_compaction()
        if planned is None:
            return False
        token, head = planned
        self.activity.compaction_since = time.time()
        try:
            replacement = await compact_head(self.client, self.core.config, head, self.thread_id)
        except ModelError as exc:
            log.warning("compaction failed; the turn goes on", thread_id=self.thread_id, error=exc.message)
            self.core.abort_compaction(token)
            return False
        except BaseException:
            self.core.abort_compaction(token)
            raise
        finally:
            self.activity.compaction_since = None
        await self.log.ready()
        effects = self.core.finish_compaction(token, replacement, reason)
        if effects is None:
            return False
        self.commit(effects)
        return True

    @property
    def chain_anchor(self) -> tuple[str, int] | None:
        return self.core.conversation.anchor if self.core.config.chain else None

    def note_response(self, response_id: str | None) -> None:
        self.core.note_response(response_id)

    def drop_chain(self) -> None:
        self.core.drop_chain()

    async def discard_since(self, start: int, reason: str) -> None:
        await self.log.ready()
        self.commit(self.core.discard_since(start, reason))

    async def drop_reasoning(self, reason: str, keys: frozenset[str]) -> None:
        await self.log.ready()
        self.commit(self.core.drop_reasoning(reason, keys))

    async def note_rate_limits(self, limits: Sequence[RateLimits]) -> None:
        reported = [limit.to_dict() for limit in limits]
        self.limits.record(reported)
        await self.emit(AccountRateLimits, {"turn_id": self.turn_id, "limits": reported})

    @property
    def approval_rules(self) -> ApprovalRules:
        return self.approval.rules + self.core.config.approval_rules

    async def request_approval(self, call_id: str, tool: str, arguments: Any, summary: str, rule: tuple[str, ...] | None = None) -> str:
        request = PendingApproval(new_approval_id(), self.thread_id, self.turn_id, call_id, tool, arguments, summary, rule)
        timeout_s = self.approval.timeout_s(self.core.config.approval, self.tuning.approval_timeout_s)
        self.activity.approving(call_id, request.request_id)
        try:
            decision = await self.approvals.ask(request, self.emit, timeout_s)
        finally:
            self.activity.approving(call_id, None)
        if request.always and request.rule is not None and request.rule not in self.core.config.approval_allow:
            await self.log.ready()
            rules = ConfigRules(known_tools=self.tools.names(), catalog=self.client.catalog)
            self.commit(self.core.configure({"approval_allow": [*self.core.config.approval_allow, request.rule]}, rules))
        return decision

    def _within_output_budget(self, chunk: str) -> str:
        """What of ``chunk`` may still be streamed this turn (``turn_output_bytes``): past
        the budget, tools run on and the model still gets each output's head and tail, but
        clients and the log get one notice instead of the rest."""
        budget = self.tuning.turn_output_bytes
        left = budget - self.streamed_output_bytes
        if left < 0:  # the notice went out
            return ""
        encoded = chunk.encode()
        if len(encoded) <= left:
            self.streamed_output_bytes += len(encoded)
            return chunk
        self.streamed_output_bytes = budget + 1
        kept = encoded[:left].decode(errors="ignore")
        return f"{kept}\n[echsd: this turn streamed {budget:,} bytes of tool output, its limit (turn_output_bytes); the rest is not streamed, the model still sees each output's head and tail]\n"

    def tool_context(self, call_id: str) -> ToolContext:
        turn_id = self.turn_id

        async def emit_output(stream: str, chunk: str) -> None:
            chunk = self._within_output_budget(printable(chunk))
            if chunk:
                await self.emit(ToolOutput, {"turn_id": turn_id, "call_id": call_id, "stream": stream, "chunk": chunk})

        config = self.core.config
        return ToolContext(
            thread_id=self.thread_id,
            turn_id=turn_id,
            call_id=call_id,
            cwd=Path(config.cwd),
            emit_output=emit_output,
            timeout_s=self.tuning.tool_timeout_s,
            writes=config.writes,
            caps=self.caps,
            sandbox=sandbox_runtime().policy(
                self.thread_id, mode=config.sandbox, network=config.network == "on", cwd=config.cwd, writable_roots=config.writable_roots
            ),
        )
