"""echsd events -> app-server notifications, for one thread (sans-IO).

``ThreadTranslator.feed`` takes the thread's event envelopes in ``seq`` order (replayed
from the log or live from the hub) and returns what a client watching the thread must be
told: notifications, approval requests to send, approval requests that ended. The same
pass keeps the thread's turns with their finished items, which is how ``thread/read``,
``thread/turns/list`` and ``thread/items/list`` see a thread's past: the event log is
replayed through a fresh translator (``keep_turns=True``).

Mapping (echsd event -> protocol):

- ``turn.started`` -> ``turn/started``; ``turn.completed|interrupted|error`` ->
  ``turn/completed`` with status completed|interrupted|failed (``turn.error`` also sends
  ``error``); ``thread.state`` -> ``thread/status/changed``;
- ``input.delivered`` + the user message's ``item.completed`` -> a ``userMessage`` item
  whose id is the input id (and ``clientId`` the client's message id, when it sent it);
- ``turn.delta`` -> ``agentMessage`` item started, ``item/agentMessage/delta``; the
  assistant message's ``item.completed`` completes it (reasoning likewise; see
  ``item_events``);
- ``tool.started`` / ``tool.output`` / ``tool.completed`` -> the call's item started,
  ``item/commandExecution/outputDelta``, completed (see ``calls``: commands and their exec
  sessions, patches, images, sub-agent calls); ``subagent.completed`` -> a
  ``subAgentActivity`` item;
- ``approval.requested`` / ``approval.resolved`` -> an approval request to send / one
  to withdraw (``serverRequest/resolved``), with the thread status's approval flag;
- ``turn.usage`` -> ``thread/tokenUsage/updated`` (``last``: the turn, ``total``: the
  thread so far); ``turn.retry`` -> ``error`` with ``willRetry``; ``thread.compacted``
  during a turn -> a ``contextCompaction`` item (the protocol's successor of
  ``thread/compacted``); ``plan.updated`` -> ``turn/plan/updated``;
  ``account.rate_limits`` -> ``account/rateLimits/updated``; ``turn.waiting`` ->
  ``warning`` (the turn waits for a free sub-agent slot); ``turn.diff`` ->
  ``turn/diff/updated``; ``thread.undone`` -> ``thread/reverted``, and the undone turns'
  events are passed over from then on (and from the start, for the turns the thread
  object lists in ``undone_turns``).

Not shown, having no counterpart in the protocol: ``run.finished`` (an autonomous run's
turns are shown as turns), ``history.pruned``, ``input.queued``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from echsd.appserver import items, shapes
from echsd.appserver.calls import CallEvents
from echsd.appserver.ids import thread_uuid
from echsd.appserver.item_events import ItemEvents
from echsd.appserver.outs import ApprovalEnded, AskApproval, Notify, Out
from echsd.appserver.sessions import Sessions, session_id_of
from echsd.appserver.turns import USAGE_FIELDS, TurnView, status_object, usage_breakdown
from echsd.events import (
    AccountRateLimits,
    ApprovalRequested,
    ApprovalResolved,
    EventData,
    EventsGap,
    ExecSessionEnded,
    InputDelivered,
    ItemCompleted,
    PlanUpdated,
    StateChanged,
    SubagentCompleted,
    SubagentSpawned,
    ThreadCompacted,
    ThreadConfigured,
    ThreadCreated,
    ThreadUndone,
    ToolCompleted,
    ToolOutput,
    ToolStarted,
    TurnCompleted,
    TurnDelta,
    TurnDiff,
    TurnError,
    TurnInterrupted,
    TurnReasoningDelta,
    TurnRetry,
    TurnStarted,
    TurnUsage,
    TurnWaiting,
)

TURN_END_STATUS: dict[type[EventData], str] = {TurnCompleted: "completed", TurnInterrupted: "interrupted", TurnError: "failed"}
PLAN_STATUS = {"pending": "pending", "in_progress": "inProgress", "completed": "completed"}


class ThreadTranslator(ItemEvents, CallEvents):
    def __init__(
        self,
        thread_id: str,
        *,
        keep_turns: bool = False,
        client_ids: Mapping[str, str] | None = None,
        context_window: Callable[[str], int | None] | None = None,
        usage_total: Callable[[], Mapping[str, Any]] | None = None,
        undone: set[str] | None = None,
    ) -> None:
        """``usage_total``: the thread's usage so far (its object's ``usage``), for a
        translator that has not seen every turn; else the turns' usage is summed.
        ``undone``: turns an undo took back (their events are passed over)."""
        self.thread_id = thread_id
        self.uuid = thread_uuid(thread_id)
        self.keep_turns = keep_turns
        self.client_ids = client_ids if client_ids is not None else {}
        self._context_window = context_window
        self._usage_total = usage_total
        self.turns: list[TurnView] = []
        self.turn: TurnView | None = None
        self.last_turn: TurnView | None = None  # the running turn, else the one that ran last
        self.state = "idle"
        self.cwd = ""
        self.model = ""
        self.last_seq = 0
        self.approvals: dict[str, dict[str, Any]] = {}  # pending: echsd id -> approval.requested data
        self.total = {name: 0 for name, _ in USAGE_FIELDS} | {"totalTokens": 0}
        self.cwd_moved_at: int | None = None  # the first seq at which the cwd changed
        self.items_init()
        self.undone: set[str] = set(undone or ())
        self._passing: str | None = None  # an undone turn whose events are being passed over
        self.calls_init(Sessions())

    # -- the one entry point ----------------------------------------------------------------

    def feed(self, event: Mapping[str, Any]) -> list[Out]:
        seq = event.get("seq")
        if isinstance(seq, int):
            if seq <= self.last_seq:
                return []  # seen already (replay and live overlap)
            if event.get("event") != EventsGap.type_name:
                self.last_seq = seq
        found = _HANDLERS.get(str(event.get("event")))
        if found is None:
            return []
        kind, handler = found
        data = event.get("data")
        if self._passed_over(kind, data if isinstance(data, dict) else {}):
            return []
        ms = int(float(event.get("ts") or 0.0) * 1000)
        return handler(self, kind.of(data if isinstance(data, dict) else {}), ms, seq if isinstance(seq, int) else 0)

    def _passed_over(self, kind: type[EventData], data: Mapping[str, Any]) -> bool:
        """Whether an event belongs to an undone turn (from its start through its end)."""
        if kind is TurnStarted:
            self._passing = str(data.get("turn_id")) if data.get("turn_id") in self.undone else None
            return self._passing is not None
        if self._passing is None or kind.type_name.startswith("thread."):
            return False
        if kind in TURN_END_STATUS and data.get("turn_id") == self._passing:
            self._passing = None
        return True

    def seed(self, thread: Mapping[str, Any]) -> None:
        """Start from an echsd thread object instead of the log's beginning: events up to
        its ``last_seq`` are taken as seen."""
        self._configure(thread.get("config"))
        self.state = str(thread.get("state") or "idle")
        self.last_seq = int(thread.get("last_seq") or 0)

    def follow(self, event: Mapping[str, Any]) -> None:
        """Read an event past the turns being replayed (``history``) only for what still
        changes them: their exec sessions' output and ends, and the thread's cwd."""
        kind, data = event.get("event"), event.get("data")
        if not isinstance(data, dict) or not (self.sessions or kind == ThreadConfigured.type_name):
            return
        seq, ms = int(event.get("seq") or 0), int(float(event.get("ts") or 0.0) * 1000)
        if kind == ThreadConfigured.type_name:
            self._thread_configured(ThreadConfigured.of(data), ms, seq)
        elif kind == ExecSessionEnded.type_name:
            self.session_ended(ExecSessionEnded.of(data), ms, seq)
        elif kind == ToolStarted.type_name:
            started = ToolStarted.of(data)
            session_id = session_id_of(started.arguments) if started.name == "write_stdin" else None
            if session_id is not None:
                self.sessions.typing(str(started.call_id), session_id)
        elif kind == ToolCompleted.type_name:
            self.tool_completed(ToolCompleted.of(data), ms, seq)

    @property
    def status(self) -> dict[str, Any]:
        return status_object(self.state, bool(self.approvals))

    @property
    def running_turn(self) -> str | None:
        return self.turn.id if self.turn is not None else None

    # -- thread ------------------------------------------------------------------------------

    def _thread_created(self, event: ThreadCreated, ms: int, seq: int) -> list[Out]:
        thread = event.thread if isinstance(event.thread, dict) else {}
        self._configure(thread.get("config"))
        return []

    def _thread_configured(self, event: ThreadConfigured, ms: int, seq: int) -> list[Out]:
        if "cwd" in (event.changed or ()) and self.cwd_moved_at is None:
            self.cwd_moved_at = seq
        self._configure(event.config)
        return []

    def _configure(self, config: Any) -> None:
        if isinstance(config, dict):
            self.cwd = str(config.get("cwd") or self.cwd)
            self.model = str(config.get("model") or self.model)

    def _thread_state(self, event: StateChanged, ms: int, seq: int) -> list[Out]:
        state = str(event.state or "idle")
        if state == self.state:
            return []
        self.state = state
        return [self._status_changed()]

    def _status_changed(self) -> Notify:
        return Notify("thread/status/changed", {"threadId": self.uuid, "status": self.status})

    # -- turns -------------------------------------------------------------------------------

    def _turn_started(self, event: TurnStarted, ms: int, seq: int) -> list[Out]:
        out = self._close_turn("interrupted", None, ms)  # a turn left open (a crash): close it
        self.turn = self.last_turn = TurnView(str(event.turn_id), ms / 1000, seq, self.cwd)
        if self.keep_turns:
            self.turns.append(self.turn)
        self._delivered.clear()
        out.append(Notify("turn/started", {"threadId": self.uuid, "turn": self.turn.to_turn("notLoaded")}))
        return out

    def _close_turn(self, status: str, error: dict[str, Any] | None, ms: int) -> list[Out]:
        turn = self.turn
        if turn is None:
            return []
        out = self.abandon_calls(ms)
        self._streaming.clear()
        if error is not None:
            out.append(Notify("error", {"threadId": self.uuid, "turnId": turn.id, "error": error, "willRetry": False}))
        turn.status, turn.error, turn.completed_at = status, error, ms / 1000
        self.turn = None
        out.append(Notify("turn/completed", {"threadId": self.uuid, "turn": turn.to_turn("summary")}))
        return out

    def _turn_retry(self, event: TurnRetry, ms: int, seq: int) -> list[Out]:
        if self.turn is None:
            return []
        message = f"retrying the model request (attempt {event.attempt}): {event.reason}"
        return [Notify("error", {"threadId": self.uuid, "turnId": self.turn.id, "error": {"message": message}, "willRetry": True})]

    def _turn_usage(self, event: TurnUsage, ms: int, seq: int) -> list[Out]:
        last = usage_breakdown(event.raw)
        for key, value in last.items():
            self.total[key] += value
        if self._usage_total is not None:
            self.total = usage_breakdown(self._usage_total())
        window = self._context_window(self.model) if self._context_window is not None and self.model else None
        usage = {"total": dict(self.total), "last": last, "modelContextWindow": window}
        turn_id = str(event.turn_id or self.running_turn or "")
        return [Notify("thread/tokenUsage/updated", {"threadId": self.uuid, "turnId": turn_id, "tokenUsage": usage})]

    def _plan_updated(self, event: PlanUpdated, ms: int, seq: int) -> list[Out]:
        turn_id = event.turn_id or self.running_turn
        if not turn_id:
            return []
        steps = [step for step in event.steps or () if isinstance(step, dict)]
        plan = [{"step": str(step.get("step", "")), "status": PLAN_STATUS.get(str(step.get("status")), "pending")} for step in steps]
        params = {"threadId": self.uuid, "turnId": str(turn_id), "explanation": event.explanation, "plan": plan}
        return [Notify("turn/plan/updated", params)]

    def _rate_limits(self, event: AccountRateLimits, ms: int, seq: int) -> list[Out]:
        limits = [entry for entry in event.limits or () if isinstance(entry, dict)]
        return [Notify("account/rateLimits/updated", {"rateLimits": shapes.rate_limits(entry)}) for entry in limits]

    def _compacted(self, event: ThreadCompacted, ms: int, seq: int) -> list[Out]:
        if self.turn is None:
            return []
        item = {"type": "contextCompaction", "id": f"item-{seq}"}
        return [self._started(item, ms), self._completed(item, ms, ms)]

    def _turn_diff(self, event: TurnDiff, ms: int, seq: int) -> list[Out]:
        """``turn/diff/updated``: the turn's unified diff (sent once, when the turn has it)."""
        turn_id = event.turn_id or self.running_turn
        if not turn_id:
            return []
        return [Notify("turn/diff/updated", {"threadId": self.uuid, "turnId": str(turn_id), "diff": str(event.diff or "")})]

    def _undone(self, event: ThreadUndone, ms: int, seq: int) -> list[Out]:
        """Turns taken back (``thread/revert``, ``echs undo``): they leave the kept turns."""
        gone = {str(turn_id) for turn_id in event.turn_ids or ()}
        self.undone |= gone
        self.turns = [turn for turn in self.turns if turn.id not in gone]
        if self.last_turn is not None and self.last_turn.id in gone:
            self.last_turn = self.turns[-1] if self.turns else None
        return [Notify("thread/reverted", {"threadId": self.uuid})]

    def _turn_waiting(self, event: TurnWaiting, ms: int, seq: int) -> list[Out]:
        return [Notify("warning", {"threadId": self.uuid, "message": f"The turn waits: {event.reason or 'no free slot'}"})]

    # -- approvals ---------------------------------------------------------------------------

    def _approval_requested(self, event: ApprovalRequested, ms: int, seq: int) -> list[Out]:
        approval_id = str(event.request_id)
        self.approvals[approval_id] = dict(event.raw)
        return [self._ask(approval_id, self.approvals[approval_id]), self._status_changed()]

    def _ask(self, approval_id: str, data: dict[str, Any]) -> AskApproval:
        call = self.calls.get(str(data.get("call_id")))
        ms = int(float(data.get("requested_at") or 0) * 1000)
        return AskApproval(approval_id, *items.approval_request(self.uuid, data, call, self.cwd, ms))

    def pending_asks(self, still_waiting: set[str]) -> list[Out]:
        """Requests for the approvals seen pending that echsd still waits on (a client
        that attaches to a thread mid-approval is asked too)."""
        return [self._ask(approval_id, data) for approval_id, data in self.approvals.items() if approval_id in still_waiting]

    def _approval_resolved(self, event: ApprovalResolved, ms: int, seq: int) -> list[Out]:
        approval_id = str(event.request_id)
        if self.approvals.pop(approval_id, None) is None:
            return []
        return [ApprovalEnded(approval_id, str(event.decision)), self._status_changed()]


def _make_turn_end(status: str) -> Handler:
    def handler(self: ThreadTranslator, event: Any, ms: int, seq: int) -> list[Out]:
        failure = event.error if isinstance(event, TurnError) else None
        if self.turn is None or (event.turn_id is not None and event.turn_id != self.turn.id):
            if failure:
                return [Notify("warning", {"threadId": self.uuid, "message": _error_message(failure)})]
            return []
        error = {"message": _error_message(failure)} if status == "failed" else None
        return self._close_turn(status, error, ms)

    return handler


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        return f"{message} ({code})" if code and message else str(message or code or "the turn failed")
    return str(error or "the turn failed")


Handler = Callable[["ThreadTranslator", Any, int, int], list[Out]]  # (translator, typed event, ms, seq)

_BY_TYPE: dict[type[EventData], Handler] = {
    ThreadCreated: ThreadTranslator._thread_created,
    ThreadConfigured: ThreadTranslator._thread_configured,
    StateChanged: ThreadTranslator._thread_state,
    ThreadCompacted: ThreadTranslator._compacted,
    PlanUpdated: ThreadTranslator._plan_updated,
    AccountRateLimits: ThreadTranslator._rate_limits,
    TurnWaiting: ThreadTranslator._turn_waiting,
    TurnDiff: ThreadTranslator._turn_diff,
    ThreadUndone: ThreadTranslator._undone,
    TurnStarted: ThreadTranslator._turn_started,
    TurnRetry: ThreadTranslator._turn_retry,
    TurnUsage: ThreadTranslator._turn_usage,
    InputDelivered: ThreadTranslator._input_delivered,
    ItemCompleted: ThreadTranslator._item_completed,
    TurnDelta: lambda self, event, ms, seq: self._delta("agentMessage", event, ms, seq),
    TurnReasoningDelta: lambda self, event, ms, seq: self._delta("reasoning", event, ms, seq),
    ToolStarted: ThreadTranslator.tool_started,
    ToolOutput: ThreadTranslator.tool_output,
    ToolCompleted: ThreadTranslator.tool_completed,
    ExecSessionEnded: ThreadTranslator.session_ended,
    SubagentSpawned: ThreadTranslator.subagent_spawned,
    SubagentCompleted: ThreadTranslator.subagent_completed,
    ApprovalRequested: ThreadTranslator._approval_requested,
    ApprovalResolved: ThreadTranslator._approval_resolved,
    **{kind: _make_turn_end(status) for kind, status in TURN_END_STATUS.items()},
}
_HANDLERS: dict[str, tuple[type[EventData], Handler]] = {kind.type_name: (kind, handler) for kind, handler in _BY_TYPE.items()}
