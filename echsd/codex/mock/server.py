"""The mock upstream server: trio + h11, one task per connection.

It listens on loopback TCP (``echsd mock-upstream``, tests) or, for the daemon's built-in
mock, on a unix socket only the daemon's user can reach (mode 0600 in the 0700 state dir):
a TCP port would let any local user feed it unbounded requests before any authentication.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator

import h11
import trio

from echsd.codex.mock.app import MAX_RECORDS, JsonAnswer, MockApp, RecordedRequest, StreamAnswer
from echsd.codex.mock.http11 import Connection
from echsd.codex.mock.playback import play
from echsd.codex.mock.script import Script, load_script, parse_script
from echsd.logs import get_logger, register_secret

log = get_logger(__name__)


def as_script(script: Script | dict[str, Any] | str | Path | None) -> Script | None:
    """A ``Script``, its JSON-like document, or the path of a script file."""
    if script is None or isinstance(script, Script):
        return script
    if isinstance(script, dict):
        return parse_script(script)
    return load_script(script)


class MockUpstream:
    """A scripted Responses API server on loopback. Run ``serve`` in a nursery
    (``await nursery.start(mock.serve)``) or use ``open_mock_upstream``."""

    def __init__(
        self,
        script: Script | dict[str, Any] | str | Path | None = None,
        *,
        require_token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        inspect: bool = False,
        max_records: int = MAX_RECORDS,
        unix_socket: Path | None = None,
    ) -> None:
        """``inspect`` serves ``/_mock/requests`` and ``/_mock/reset`` (never in the daemon);
        ``requests`` keeps the last ``max_records`` requests either way (in-process only).
        ``unix_socket``: listen there (its directory must be private) instead of on TCP."""
        register_secret(require_token)
        self.app = MockApp(as_script(script), require_token, inspect=inspect, max_records=max_records)
        self.host = host
        self.port = port
        self.unix_socket = unix_socket

    @property
    def base_url(self) -> str:
        """The URL to request (on a unix socket, its host only names the mock)."""
        if self.unix_socket is not None:
            return "http://echsd-mock/v1"
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The most recent requests, oldest first (a bounded ring: see ``MockApp``)."""
        return list(self.app.requests)

    async def wait_requests(self, count: int) -> None:
        await self.app.wait_requests(count)

    def reset(self) -> None:
        self.app.reset()

    async def serve(self, *, task_status: trio.TaskStatus[MockUpstream] = trio.TASK_STATUS_IGNORED) -> None:
        if self.unix_socket is not None:
            await self._serve_unix(self.unix_socket, task_status)
            return
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, self._connection, self.port, host=self.host))
            self.port = listeners[0].socket.getsockname()[1]
            log.info("mock upstream listening", url=self.base_url)
            task_status.started(self)

    async def _serve_unix(self, path: Path, task_status: trio.TaskStatus[MockUpstream]) -> None:
        """Listen on ``path`` (mode 0600); a path too long for a socket falls back to a
        private temporary directory. The socket file is removed when serving ends."""
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        private_dir: str | None = None
        try:
            try:
                await _bind_private(sock, path)
            except OSError as exc:
                if exc.errno != errno.ENAMETOOLONG:
                    raise
                private_dir = tempfile.mkdtemp(prefix="echsd-mock-")  # mode 0700
                path = self.unix_socket = Path(private_dir) / "mock.sock"
                await _bind_private(sock, path)
            sock.listen(128)
            async with trio.open_nursery() as nursery:
                await nursery.start(trio.serve_listeners, self._connection, [trio.SocketListener(sock)])
                log.info("mock upstream listening", url=f"unix://{path}")
                task_status.started(self)
        finally:
            sock.close()
            path.unlink(missing_ok=True)
            if private_dir is not None:
                shutil.rmtree(private_dir, ignore_errors=True)

    async def _connection(self, stream: trio.SocketStream) -> None:
        try:
            await self._serve_requests(Connection(stream))
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass
        except Exception:  # a mock bug must not take down the process hosting it (the daemon)
            log.exception("mock upstream failed while serving a connection")
        finally:
            await trio.aclose_forcefully(stream)

    async def _serve_requests(self, conn: Connection) -> None:
        while (received := await conn.next_request()) is not None:
            request, raw = received
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
            answer = self.app.handle(request.method.decode(), request.target.decode("latin-1"), headers, raw)
            if isinstance(answer, JsonAnswer):
                await conn.send_json(answer.status, answer.body, answer.headers)
            elif not await self._stream(conn, answer):
                return
            if not conn.reusable():
                return

    async def _stream(self, conn: Connection, answer: StreamAnswer) -> bool:
        """Play a streaming answer while watching for the client hanging up."""
        hung_up = answer.record.disconnected
        keep = False
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.watch_for_hangup, hung_up, nursery.cancel_scope)
            try:
                keep = await play(conn, answer)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                hung_up.set()
            nursery.cancel_scope.cancel()
        return keep and not hung_up.is_set()


async def _bind_private(sock: trio.socket.SocketType, path: Path) -> None:
    """Bind ``path`` mode 0600 (under a temporary name first: never reachable looser)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    await sock.bind(str(tmp))
    try:
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@asynccontextmanager
async def open_mock_upstream(
    script: Script | dict[str, Any] | str | Path | None = None,
    require_token: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    inspect: bool = False,
    unix_socket: Path | None = None,
) -> AsyncIterator[MockUpstream]:
    """``async with open_mock_upstream() as mock:`` a running mock at ``mock.base_url``
    (through ``mock.unix_socket`` when one is given)."""
    mock = MockUpstream(script, require_token=require_token, host=host, port=port, inspect=inspect, unix_socket=unix_socket)
    async with trio.open_nursery() as nursery:
        await nursery.start(mock.serve)
        try:
            yield mock
        finally:
            nursery.cancel_scope.cancel()
