"""The input line of ``echs attach``: a prompt_toolkit ``PromptSession`` read from trio.

prompt_toolkit runs on asyncio, so each ``prompt()`` runs in a worker thread (its own
event loop there) while trio keeps printing events; ``patch_stdout`` (entered by the
caller) makes those prints appear above the input line. Ctrl-C and Ctrl-D are keys while
the prompt has the terminal in raw mode, so they come back as ``INTERRUPT`` / ``EOF``
results rather than signals. ``close`` makes a prompt that is waiting for input return
(``EOF``) so the terminal is restored before the process exits.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import trio

INTERRUPT = "\x03"  # Ctrl-C at the prompt
EOF = "\x04"  # Ctrl-D (or the prompt was closed)
CLOSE_TIMEOUT_S = 2.0


class PromptLine:
    def __init__(self, message: Callable[[], Any]) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory

        self._session: PromptSession[str] = PromptSession(message, history=InMemoryHistory())
        self._lock = threading.Lock()
        self._closing = False
        self._started = False  # a prompt is running in the worker thread
        self._idle = threading.Event()  # no prompt running (safe to exit the process)
        self._idle.set()

    async def read(self) -> str:
        """The next line typed, or ``INTERRUPT`` / ``EOF``."""
        return await trio.to_thread.run_sync(self._read_blocking, abandon_on_cancel=True)

    def _read_blocking(self) -> str:
        with self._lock:
            if self._closing:
                return EOF
            self._idle.clear()
        try:
            return self._session.prompt(pre_run=self._on_start)
        except KeyboardInterrupt:
            return INTERRUPT
        except EOFError:
            return EOF
        finally:
            with self._lock:
                self._started = False
            self._idle.set()

    def _on_start(self) -> None:
        """In the worker thread, once the prompt's application runs."""
        with self._lock:
            self._started = True
            if self._closing:
                self._session.app.exit(exception=EOFError())

    def refresh(self) -> None:
        """Redraw the prompt (its message changed); thread-safe."""
        with self._lock:
            if self._started:
                self._session.app.invalidate()

    async def close(self) -> None:
        """Make a waiting prompt return and wait (briefly) until it has let go of the terminal."""
        with self._lock:
            self._closing = True
            app = self._session.app
            loop = app.loop if self._started else None
        if loop is not None:
            loop.call_soon_threadsafe(self._exit_app)
        await trio.to_thread.run_sync(self._idle.wait, CLOSE_TIMEOUT_S)

    def _exit_app(self) -> None:
        app = self._session.app
        if app.is_running and not app.is_done:
            app.exit(exception=EOFError())
