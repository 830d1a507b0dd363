"""One connection's view of one thread: its running turn replayed from the log, then live.

The seam is ``echsd.seam.Seam``'s (the wire's subscriptions follow it too): listen to the
hub *first*, hold its events while the stored ones are read (bounded: past ``MAX_EARLY`` the
log is read again instead), then let the held ones go on above what was read. The replayed part only brings the translator up to date
(the client reads the past with ``thread/read`` and friends), so it is no more than the
turn that runs now (its calls, approvals and inputs): the rest of the translator's state
comes from the thread object (state, config, usage so far). Exec sessions an earlier turn
left running are not known to it: typing into one shows as an interaction without its
command. Live events become notifications.

Two small services for ``turn/start`` and ``turn/steer``: ``hold`` keeps events back
(untranslated) while a request is being answered (so the response comes before the
``turn/started`` it caused, as Codex's own server orders them), and ``turn_of`` /
``expect`` tell which turn took an input.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Mapping

from echsd.appserver.stored import Envelope, is_turn_start, scan_back, stored_pages
from echsd.appserver.translate import Out, ThreadTranslator
from echsd.events import Event
from echsd.logs import get_logger
from echsd.seam import Seam
from echsd.ops.daemon import ListApprovals
from echsd.ops.threads import Get
from echsd.threads.hub import Listening

if TYPE_CHECKING:
    from echsd.appserver.context import AppContext

log = get_logger(__name__)

REMEMBERED_INPUTS = 1024
MAX_EARLY = 10_000  # live events held while a feed catches up from the log
InputOutcome = Callable[[str | None, str | None], None]  # (turn id, or the reason it was dropped)


class ThreadFeed:
    def __init__(
        self,
        thread_id: str,
        context: AppContext,
        sink: Callable[[list[Out]], None],
        client_ids: Mapping[str, str],
        context_window: Callable[[str], int | None],
    ) -> None:
        self.thread_id = thread_id
        self.ops = context.router
        self.hub = context.hub
        self._usage_now: dict[str, Any] = {}  # the thread's usage, kept current from turn.usage
        self._usage_seq = 0  # the seq the thread object's usage was read at
        self.translator = ThreadTranslator(
            thread_id, client_ids=client_ids, context_window=context_window, usage_total=self._usage
        )
        self._sink = sink
        self._listening: Listening | None = None
        self._seam: Seam[str, Event] = Seam(MAX_EARLY)  # live events held while the log is read
        self._held: list[dict[str, Any]] | None = None  # events that arrived while held
        self._holds = 0
        self._turn_of: OrderedDict[str, str] = OrderedDict()  # input id -> the turn that took it
        self._expected: dict[str, InputOutcome] = {}

    async def start(self) -> None:
        """Listen, catch up from the thread object and its running turn, then go live
        (pending approvals are asked)."""
        seam = self._seam
        seam.begin(lambda thread_id: True)
        self._listening = self.hub.listen(self.thread_id, self._on_live)
        try:
            thread = await self.ops.run(Get(thread_id=self.thread_id))
            self._usage_now = dict(thread.get("usage") or {})
            self._usage_seq = int(thread.get("last_seq") or 0)
            self.translator.seed(thread)
            running = thread.get("active_turn")
            found = await scan_back(self.ops, self.thread_id, self.translator.last_seq + 1, _start_of(running), 1) if running else []
            if found:
                self.translator.last_seq = found[0]["seq"] - 1
            seam.cursor[self.thread_id] = self.translator.last_seq
            while True:
                async for page in stored_pages(self.ops, self.thread_id, after=seam.position(self.thread_id)):
                    for envelope in page:
                        if seam.replayed(self.thread_id, int(envelope["seq"])):
                            self._track(envelope)
                            self.translator.feed(envelope)
                waiting = await self._waiting_approvals()
                early, reread = seam.finish()  # no checkpoint from here: the held events go first
                if not reread:
                    break
        except BaseException:
            seam.abort()
            self.close()
            raise
        self._sink(self.translator.pending_asks(waiting))
        for event in early:
            self._process(event.envelope())

    def _usage(self) -> Mapping[str, Any]:
        """The thread's usage so far: as read at the start, plus every later ``turn.usage``
        (the thread object adds a turn's usage in the unit that logs its ``turn.usage``)."""
        return self._usage_now

    def close(self) -> None:
        if self._listening is not None:
            self._listening.close()
            self._listening = None

    # -- requests that wait on the feed -------------------------------------------------------

    def hold(self) -> None:
        self._holds += 1
        if self._held is None:
            self._held = []

    def release(self) -> None:
        """Translate what arrived while held (the request's answer has gone out, and the
        input's client id is known by now)."""
        self._holds -= 1
        if self._holds == 0 and self._held is not None:
            held, self._held = self._held, None
            for envelope in held:
                self._emit(envelope)

    def turn_of(self, input_id: str) -> str | None:
        return self._turn_of.get(input_id)

    def expect(self, input_id: str, outcome: InputOutcome) -> None:
        """Call ``outcome(turn_id, None)`` when the input's turn starts (before its
        notifications go out), or ``outcome(None, reason)`` if it is dropped."""
        self._expected[input_id] = outcome

    def forget(self, input_id: str) -> None:
        self._expected.pop(input_id, None)

    # -- events ---------------------------------------------------------------------------------

    def _on_live(self, event: Event) -> None:
        """The hub callback: never raises (the hub would drop us) and never blocks."""
        if self._seam.holding is not None and self._seam.holds(self.thread_id, event.seq, event):
            return
        try:
            self._process(event.envelope())
        except Exception:
            log.exception("cannot follow an event", thread_id=self.thread_id, seq=event.seq, event=event.type)

    def _process(self, envelope: dict[str, Any]) -> None:
        self._track(envelope)
        if self._held is not None:
            self._held.append(envelope)
        else:
            self._emit(envelope)

    def _emit(self, envelope: dict[str, Any]) -> None:
        """Translate and send; an event that cannot be translated is logged and skipped."""
        try:
            outs = self.translator.feed(envelope)
            if outs:
                self._sink(outs)
        except Exception:
            log.exception("cannot translate an event", thread_id=self.thread_id, seq=envelope.get("seq"), event=envelope.get("event"))

    def _track(self, envelope: Mapping[str, Any]) -> None:
        """Which turn took which input; answer whoever waits for one; the usage so far."""
        kind, data = envelope.get("event"), envelope.get("data") or {}
        if kind == "turn.usage" and int(envelope.get("seq") or 0) > self._usage_seq:
            for key, value in data.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._usage_now[key] = self._usage_now.get(key, 0) + value
            self._usage_seq = int(envelope.get("seq") or 0)
        if kind == "turn.started":
            for input_id in data.get("input_ids") or ():
                self._took(str(input_id), str(data.get("turn_id")))
        elif kind == "input.delivered":
            self._took(str(data.get("input_id")), str(data.get("turn_id")))
        elif kind == "input.dropped":
            outcome = self._expected.pop(str(data.get("input_id")), None)
            if outcome is not None:
                outcome(None, str(data.get("reason") or "dropped"))

    def _took(self, input_id: str, turn_id: str) -> None:
        self._turn_of[input_id] = turn_id
        while len(self._turn_of) > REMEMBERED_INPUTS:
            self._turn_of.popitem(last=False)
        outcome = self._expected.pop(input_id, None)
        if outcome is not None:
            outcome(turn_id, None)

    async def _waiting_approvals(self) -> set[str]:
        """Approvals still waiting when we caught up (this client is asked too)."""
        return {approval["request_id"] for approval in await self.ops.run(ListApprovals(thread_id=self.thread_id))}


def _start_of(turn_id: str) -> Callable[[Envelope], bool]:
    return lambda envelope: is_turn_start(envelope) and (envelope.get("data") or {}).get("turn_id") == turn_id
