"""What the turn loop and the tool runner may do to their thread: the ``TurnHost`` protocol.

The turn task does not see the actor or the core. It reads the thread's config and history,
emits transient events (deltas, tool progress), appends items and delivers steers through
this narrow interface; the actor's implementation (``turnhost.py``) turns each call into a
core decision committed to the store.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from echsd.approval_rules import ApprovalRules
from echsd.events import EventData
from echsd.codex import RateLimits, ResponsesClient, Usage
from echsd.settings import Tuning
from echsd.threads.activity import Activity
from echsd.threads.config import ThreadConfig
from echsd.tools.base import ToolContext
from echsd.tools.registry import ToolRegistry


class TurnHost(Protocol):
    thread_id: str
    turn_id: str
    partial: list[str]  # deltas of the message being streamed (kept if the turn is interrupted)
    client: ResponsesClient
    tuning: Tuning
    tools: ToolRegistry
    activity: Activity  # what the turn waits on now (``waiting_on``)

    @property
    def config(self) -> ThreadConfig: ...

    @property
    def parent(self) -> str | None:
        """The thread that spawned this one (a sub-agent's), or None."""

    @property
    def history(self) -> Sequence[dict[str, Any]]: ...

    @property
    def autorun(self) -> dict[str, Any] | None:
        """The autonomous run this turn belongs to (``autorun.py``), if any."""

    async def emit(self, kind: type[EventData], data: dict[str, Any]) -> None:
        """A transient event of this turn (a delta, tool progress): logged, changes no state."""

    async def append_items(self, items: Sequence[dict[str, Any]], before: Sequence[tuple[type[EventData], dict[str, Any]]] = ()) -> None:
        """Items join the history (after the ``before`` events), in one store unit."""

    async def deliver_steers(self) -> None:
        """Steered inputs waiting for this turn join the history now."""

    def settle(self) -> bool:
        """The model is done: True if steers wait (go on), else the turn takes no more steers."""

    def context_full(self) -> bool:
        """The next request would pass the model's compaction threshold."""

    def context_tokens(self) -> int:
        """How many tokens the history takes, as best known (the last response's count and an estimate since)."""

    async def fit_window(self, target: int) -> bool:
        """Cut the history's largest texts down to about ``target`` tokens; False if it fit (or nothing could be cut)."""

    async def compact(self, reason: str) -> bool:
        """Compact all but the last user turn; False if there was nothing to compact (or the
        endpoint failed at it: the turn goes on and may still fit)."""

    def add_usage(self, usage: Usage) -> None:
        """One response's usage (the host prices it from the catalog)."""

    @property
    def chain_anchor(self) -> tuple[str, int] | None:
        """With ``chain``: the stored response to continue from, and where its items end."""

    def note_response(self, response_id: str | None) -> None: ...

    def drop_chain(self) -> None: ...

    async def discard_since(self, start: int, reason: str) -> None:
        """Forget history from ``start`` on (the partial output of a broken response)."""

    async def drop_reasoning(self, reason: str, keys: frozenset[str]) -> None:
        """Leave out the reasoning items the endpoint refused (``{"*"}``: all of them)."""

    async def note_rate_limits(self, limits: Sequence[RateLimits]) -> None: ...

    @property
    def approval_rules(self) -> ApprovalRules:
        """The daemon's ``[approval]`` rules and the thread's own."""

    async def request_approval(self, call_id: str, tool: str, arguments: Any, summary: str, rule: tuple[str, ...] | None = None) -> str:
        """Ask the thread's clients; returns approve | deny | timeout (cancelled: raises).
        Approved for the thread, ``rule`` joins its allow rules before this returns."""

    def tool_context(self, call_id: str) -> ToolContext: ...
