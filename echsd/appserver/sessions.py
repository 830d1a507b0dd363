"""A thread's exec sessions as the app-server protocol shows them (sans-IO).

``exec_command`` returns after its yield time even when its command still runs: the
command goes on in an exec session (Codex's unified exec), and the call's
``commandExecution`` item must not complete as if it had exited. It stays in progress
with the session as its ``processId``; each ``write_stdin`` into the session is an
``item/commandExecution/terminalInteraction`` of that item, and its output streams and
adds to that item; the item completes (in the turn that started it) when the session
ends. What ends a session is what ends it in echsd (``echsd.tools.sessions``):

- its command exits, which a ``write_stdin`` call reports with the exit code;
- the turn that started it is interrupted (it is killed with the turn);
- the thread is paused or killed (every session is killed);
- the daemon stops: no session outlives the daemon, so one started before this daemon
  booted is over (``boot_ms``);
- a ``write_stdin`` finds it gone (the daemon closed it to make room for another).

This table holds the sessions a translator saw start; the translator turns their ends
into notifications.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from echsd.appserver.items import ToolCall
from echsd.appserver.turns import Entry

# a write_stdin refused because its session is no more (echsd.tools.sessions wording)
GONE = re.compile(r"^error: (session \d+ is gone|unknown session_id)\b")


@dataclass
class Session:
    session_id: int
    call: ToolCall  # the exec_command call whose item stands for the session
    turn_id: str
    started_ms: int
    entry: Entry | None  # the item's place in its turn's history, when the history is kept


class Sessions:
    def __init__(self, boot_ms: int = 0) -> None:
        self.boot_ms = boot_ms
        self._open: dict[int, Session] = {}
        self._typing: dict[str, int] = {}  # write_stdin call id -> the session it types into

    def __bool__(self) -> bool:
        return bool(self._open)

    def open(self, session: Session) -> None:
        self._open[session.session_id] = session

    def get(self, session_id: Any) -> Session | None:
        return self._open.get(session_id) if isinstance(session_id, int) else None

    def typing(self, call_id: str, session_id: int) -> None:
        self._typing[call_id] = session_id

    def typed_into(self, call_id: str) -> Session | None:
        """The open session a running ``write_stdin`` call types into."""
        return self.get(self._typing.get(call_id))

    def typed(self, call_id: str) -> int | None:
        """A ``write_stdin`` call finished: the session it typed into."""
        return self._typing.pop(call_id, None)

    def end(self, session_id: int) -> Session | None:
        return self._open.pop(session_id, None)

    def end_turn(self, turn_id: str) -> list[Session]:
        """The sessions that die with an interrupted turn."""
        return [self._open.pop(s.session_id) for s in list(self._open.values()) if s.turn_id == turn_id]

    def end_all(self) -> list[Session]:
        ended, self._open = list(self._open.values()), {}
        self._typing.clear()
        return ended

    def end_before_boot(self, ms: int) -> list[Session]:
        """At an event of this daemon's life (``ms`` past its boot), the sessions of an
        earlier daemon are known to be over."""
        if ms < self.boot_ms:
            return []
        return [self._open.pop(s.session_id) for s in list(self._open.values()) if s.started_ms < self.boot_ms]


def session_id_of(arguments: Any) -> int | None:
    """The session a ``write_stdin`` call's arguments name."""
    session_id = arguments.get("session_id") if isinstance(arguments, dict) else None
    if not isinstance(session_id, (int, float)) or isinstance(session_id, bool) or session_id != int(session_id):
        return None
    return int(session_id)


def exit_of(data: Mapping[str, Any]) -> tuple[bool, int | None]:
    """What a ``write_stdin`` ``tool.completed`` says of its session: (over, exit code).
    A killed command has no exit code."""
    if isinstance(data.get("session_id"), int):
        return False, None
    if "exit_code" in data or "signal" in data:
        code = data.get("exit_code")
        return True, code if isinstance(code, int) else None
    output = data.get("output")
    return bool(isinstance(output, str) and GONE.match(output)), None
