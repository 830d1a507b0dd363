"""Tool calls waiting for a person's yes or no: the daemon's book of pending approvals.

A call that its thread's ``approval`` policy holds back (``echsd/approval_rules.py``) is
announced as ``approval.requested`` on the thread's event stream (so every client watching
the thread sees it) and waits here until a client answers with ``approval.respond``, the
wait times out (denied; a thread may wait for ever), or the turn is interrupted
(cancelled). The answer may be "approve for this thread" (``always``): the request's
``rule`` then joins the thread's allow rules. The outcome is logged as
``approval.resolved``. Pending requests live in memory only, not in any client's
connection (they outlast every ``echs attach``): a daemon restart closes their turn as
interrupted, which ends them too.

A list of pending requests shows each one's arguments and summary cut short (``listed``,
``echsd.threads.approval_view``), so that any number of requests with megabytes of arguments
still list in pages of bounded size; ``approval.get`` gives one request whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import trio

from echsd.events import ApprovalRequested, ApprovalResolved, EventData
from echsd.errors import InvalidState, NotFound
from echsd.threads.approval_view import listed_form

DECISIONS = ("approve", "deny")

Announce = Callable[[type[EventData], dict[str, Any]], Awaitable[None]]  # (event type, data) on the thread's log


@dataclass(eq=False)
class PendingApproval:
    request_id: str
    thread_id: str
    turn_id: str
    call_id: str
    tool: str
    arguments: Any
    summary: str
    rule: tuple[str, ...] | None = None  # what "approve for this thread" would allow from now on
    requested_at: float = field(default_factory=time.time)
    decision: str | None = None
    always: bool = False  # approved for this thread (the rule joins its allow rules)
    answered: trio.Event = field(default_factory=trio.Event)
    _listed: dict[str, Any] | None = field(default=None, repr=False)

    def to_object(self) -> dict[str, Any]:
        """The request whole (its event, ``approval.get``)."""
        return {
            "request_id": self.request_id,
            "thread_id": self.thread_id,
            "turn_id": self.turn_id,
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "summary": self.summary,
            "rule": list(self.rule) if self.rule is not None else None,
            "requested_at": self.requested_at,
        }

    def listed(self) -> dict[str, Any]:
        """The request as a list shows it: arguments and summary cut to a bounded size
        (``arguments_truncated`` says so), worked out once."""
        if self._listed is None:
            self._listed = {**self.to_object(), **listed_form(self.arguments, self.summary)}
        return self._listed


class ApprovalBook:
    def __init__(self) -> None:
        self._pending: dict[str, PendingApproval] = {}

    async def ask(self, request: PendingApproval, announce: Announce, timeout_s: float | None) -> str:
        """Announce ``request`` and wait for its answer (``timeout_s`` None: as long as it
        takes): approve | deny | timeout | cancelled.

        Cancellation (an interrupted turn) is recorded as ``cancelled`` and propagates.
        """
        self._pending[request.request_id] = request
        decision = "cancelled"
        try:
            await announce(ApprovalRequested, request.to_object())
            with trio.move_on_after(float("inf") if timeout_s is None else timeout_s):
                await request.answered.wait()
            decision = request.decision or "timeout"
            return decision
        finally:
            self._pending.pop(request.request_id, None)
            with trio.CancelScope(shield=True):
                resolved = {"request_id": request.request_id, "call_id": request.call_id, "decision": decision}
                if request.always and decision == "approve":
                    resolved["always"] = True
                await announce(ApprovalResolved, resolved)

    def respond(self, request_id: str, decision: str, always: bool = False) -> dict[str, Any]:
        request = self._pending.get(request_id)
        if request is None:
            raise NotFound(f"no pending approval {request_id!r} (answered, timed out or cancelled already?)")
        if request.decision is not None:
            raise InvalidState(f"approval {request_id} was answered already ({request.decision})")
        if always and decision == "approve" and request.rule is None:
            raise InvalidState(f"approval {request_id} cannot be approved for the thread: its command is not one simple command (approve it once)")
        request.decision = decision
        request.always = always and decision == "approve"
        request.answered.set()
        answer = {"request_id": request_id, "decision": decision, "thread_id": request.thread_id}
        if request.always:
            answer["always"] = True
            answer["rule"] = list(request.rule or ())
        return answer

    def holds(self, request_id: str) -> bool:
        return request_id in self._pending

    def pending(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The requests waiting (of one thread, or all), oldest first, as lists show them."""
        requests = sorted(self._pending.values(), key=lambda r: r.requested_at)
        return [r.listed() for r in requests if thread_id is None or r.thread_id == thread_id]

    def get(self, request_id: str) -> dict[str, Any]:
        """One waiting request, whole."""
        request = self._pending.get(request_id)
        if request is None:
            raise NotFound(f"no pending approval {request_id!r} (answered, timed out or cancelled already?)")
        return request.to_object()
