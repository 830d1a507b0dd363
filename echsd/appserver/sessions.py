"""A thread's exec sessions as the app-server protocol shows them (sans-IO).

``exec_command`` returns after its yield time even when its command still runs: the
command goes on in an exec session (Codex's unified exec), and the call's
``commandExecution`` item must not complete as if it had exited. It stays in progress
with the session as its ``processId``; each ``write_stdin`` into the session is an
``item/commandExecution/terminalInteraction`` of that item, and its output streams and
adds to that item; the item completes (in the turn that started it) when the daemon says
the session ended (``exec.session_ended``: whatever ended it, the daemon knows and logs it;
nothing here guesses it from other events).

This table holds the sessions a translator saw start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from echsd.appserver.items import ToolCall
from echsd.appserver.turns import Entry


@dataclass
class Session:
    session_id: int
    call: ToolCall  # the exec_command call whose item stands for the session
    turn_id: str
    started_ms: int
    entry: Entry | None  # the item's place in its turn's history, when the history is kept
    ended: tuple[int | None] | None = None  # (exit code,): over, waiting for the call typing into it


class Sessions:
    def __init__(self) -> None:
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

    def being_typed_into(self, session_id: int) -> bool:
        return session_id in self._typing.values()

    def typed(self, call_id: str) -> int | None:
        """A ``write_stdin`` call finished: the session it typed into."""
        return self._typing.pop(call_id, None)

    def end(self, session_id: int) -> Session | None:
        return self._open.pop(session_id, None)


def session_id_of(arguments: Any) -> int | None:
    """The session a ``write_stdin`` call's arguments name."""
    session_id = arguments.get("session_id") if isinstance(arguments, dict) else None
    if not isinstance(session_id, (int, float)) or isinstance(session_id, bool) or session_id != int(session_id):
        return None
    return int(session_id)
