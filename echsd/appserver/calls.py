"""Tool calls, exec sessions and sub-agents, for ``ThreadTranslator`` (sans-IO).

A call becomes an item when it starts (``tool.started``: ``items.tool_call`` or
``agents.agent_call``), streams its output (``tool.output``) and completes with its
result (``tool.completed``), in the turn that runs it. Two kinds of call outlive that
pattern:

- an ``exec_command`` whose command is still running when the call returns: its item
  stays in progress, started again with the session as its ``processId`` (which tells
  the client a background terminal runs), until the session ends (``sessions``); a
  ``write_stdin`` into it is no item of its own but the session's
  ``terminalInteraction``, and its output goes to the session's item;
- the sub-agent tools, ``collabAgentToolCall`` items; a child finishing a turn
  (``subagent.completed``) is a ``subAgentActivity`` item of the running turn, or of the
  last one when the parent is idle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from echsd.appserver import agents, items
from echsd.appserver.agents import AgentCall, Spawned
from echsd.appserver.outs import Notify, Out
from echsd.appserver.sessions import Session, Sessions, session_id_of
from echsd.events import ExecSessionEnded, SubagentCompleted, SubagentSpawned, ToolCompleted, ToolOutput, ToolStarted

if TYPE_CHECKING:
    from echsd.appserver.turns import Entry, TurnView

Call = items.ToolCall | AgentCall


class CallEvents:
    """The tool-call handlers of ``ThreadTranslator`` (a mixin: it shares its state)."""

    if TYPE_CHECKING:  # provided by ThreadTranslator
        uuid: str
        cwd: str
        turn: TurnView | None
        last_turn: TurnView | None

        def _ids(self, turn: TurnView | None = None) -> dict[str, str]: ...

        def _started(self, item: dict[str, Any], ms: int, turn: TurnView | None = None) -> Notify: ...

        def _completed(self, item: dict[str, Any], started_ms: int, ms: int, turn: TurnView | None = None) -> Notify: ...

        def _keep(self, item: dict[str, Any], started_ms: int, ms: int, turn: TurnView | None = None) -> Entry | None: ...

    def calls_init(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self.calls: dict[str, Call] = {}
        self.agents: dict[str, Spawned] = {}  # children seen spawned, by thread id
        self._call_started: dict[str, int] = {}

    def tool_started(self, event: ToolStarted, ms: int, seq: int) -> list[Out]:
        if self.turn is None:
            return []
        call_id, name, arguments = str(event.call_id), str(event.name), event.arguments
        if name == "write_stdin":
            return self._typing(call_id, arguments)
        call = agents.agent_call(call_id, name, arguments, self.uuid) or items.tool_call(call_id, name, arguments, self.cwd)
        if call is None:
            return []
        self.calls[call_id] = call
        self._call_started[call_id] = ms
        return [self._started(call.item(), ms)]

    def tool_output(self, event: ToolOutput, ms: int, seq: int) -> list[Out]:
        if self.turn is None:
            return []
        call_id = str(event.call_id)
        call = self.calls.get(call_id)
        if isinstance(call, items.ToolCall) and call.kind == "commandExecution":
            item_id = call_id
        else:
            session = self.sessions.typed_into(call_id)
            if session is None:
                return []
            item_id = session.call.call_id
        params = {**self._ids(), "itemId": item_id, "delta": str(event.chunk or "")}
        return [Notify("item/commandExecution/outputDelta", params)]

    def tool_completed(self, event: ToolCompleted, ms: int, seq: int) -> list[Out]:
        call_id, data = str(event.call_id), event.raw
        typed_into = self.sessions.typed(call_id)
        if typed_into is not None:
            return self._typed(typed_into, data, ms)
        call = self.calls.pop(call_id, None)
        started = self._call_started.pop(call_id, ms)
        if call is None or self.turn is None:
            return []
        if isinstance(call, AgentCall):
            call.finish(data, self.agents)
        else:
            call.finish(data)
            if call.process_id is not None:
                return self._session_opened(call, started, ms)
        return [self._completed(call.item(), started, ms)]

    def abandon_calls(self, ms: int) -> list[Out]:
        """The turn ended: the calls still running end with it."""
        out: list[Out] = []
        for call in self.calls.values():
            call.abandon()
            out.append(self._completed(call.item(), self._call_started.get(call.call_id, ms), ms))
        self.calls.clear()
        return out

    # -- exec sessions ------------------------------------------------------------------------

    def _session_opened(self, call: items.ToolCall, started_ms: int, ms: int) -> list[Out]:
        assert self.turn is not None and call.process_id is not None
        entry = self._keep(call.item(), started_ms, ms)  # its place in the turn, in progress
        self.sessions.open(Session(int(call.process_id), call, self.turn.id, started_ms, entry))
        return [self._started(call.item(), ms)]

    def _typing(self, call_id: str, arguments: Any) -> list[Out]:
        """A ``write_stdin`` call started: its session's terminal interaction."""
        session_id = session_id_of(arguments)
        if session_id is None:
            return []
        self.sessions.typing(call_id, session_id)
        session = self.sessions.get(session_id)
        chars = arguments.get("chars") if isinstance(arguments.get("chars"), str) else ""
        params = {**self._ids(), "itemId": session.call.call_id if session else call_id, "processId": str(session_id), "stdin": chars}
        return [Notify("item/commandExecution/terminalInteraction", params)]

    def _typed(self, session_id: int, data: Mapping[str, Any], ms: int) -> list[Out]:
        """A ``write_stdin`` call returned: its output (its session's end, if it came, is
        ``exec.session_ended``, which follows)."""
        session = self.sessions.get(session_id)
        if session is None:
            return []
        session.call.add_output(items.output_of(data))
        if session.ended is not None:  # it ended during this call: its end waited for the output
            self.sessions.end(session_id)
            return self.end_sessions([session], ms, session.ended[0])
        if session.entry is not None:
            session.entry.item = session.call.item()
        return []

    def session_ended(self, event: ExecSessionEnded, ms: int, seq: int) -> list[Out]:
        """The daemon says a session is over (exited, or killed: its turn interrupted, the
        thread paused or killed, room made, a restart): its item completes."""
        session = self.sessions.get(event.session_id)
        if session is None:
            return []
        exit_code = event.exit_code if isinstance(event.exit_code, int) else None
        if self.sessions.being_typed_into(session.session_id):  # the call that saw it end reports its output first
            session.ended = (exit_code,)
            return []
        self.sessions.end(session.session_id)
        return self.end_sessions([session], ms, exit_code)

    def end_sessions(self, ended: list[Session], ms: int, exit_code: int | None = None) -> list[Out]:
        """Complete the items of sessions that ended (``exit_code`` None: killed)."""
        out: list[Out] = []
        for session in ended:
            session.call.end(exit_code, max(ms - session.started_ms, 0))
            item = session.call.item()
            if session.entry is not None:
                session.entry.item, session.entry.completed_ms = item, ms
            out.append(Notify("item/completed", {"item": item, "threadId": self.uuid, "turnId": session.turn_id, "completedAtMs": ms}))
        return out

    # -- sub-agents ---------------------------------------------------------------------------

    def subagent_spawned(self, event: SubagentSpawned, ms: int, seq: int) -> list[Out]:
        self.agents[str(event.agent_id)] = agents.spawned(event.raw)
        return []

    def subagent_completed(self, event: SubagentCompleted, ms: int, seq: int) -> list[Out]:
        turn = self.turn or self.last_turn
        item = agents.activity(f"item-{seq}", event.raw, self.agents.get(str(event.agent_id)))
        if turn is None or item is None:
            return []
        return [self._started(item, ms, turn), self._completed(item, ms, ms, turn)]
