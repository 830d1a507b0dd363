"""The daemon's side of the fork server: start confined commands from trio.

``ForkServer.spawn`` sends one ``spawn`` message (with the command's descriptors) and the
request, waits for the pid and for the exec (the error pipe closes empty) or its failure
(raised as ``OSError``), and returns a ``SandboxedProcess`` whose ``wait`` reads the exit
code the server sends when the command ends. The server is started on first use and again
if it died; nothing here blocks the event loop for more than a socket operation.
"""

from __future__ import annotations

import array
import errno
import json
import os
import signal
import socket
import subprocess
import sys
from typing import Any, Sequence

import trio

import echsd
from echsd.logs import get_logger
from echsd.tools.sandbox.forkserver import LENGTH, SPAWN
from echsd.tools.strays import daemon_helper

log = get_logger(__name__)

MAX_LINE = 4096


class SandboxedProcess:
    """A command the fork server started (its child, not ours): ``pid`` and ``wait``."""

    def __init__(self, pid: int, status: trio.socket.SocketType, buffered: bytes) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._status = status
        self._buffer = buffered
        self._lock = trio.Lock()

    async def wait(self) -> int:
        """The exit code (negative: killed by that signal). Safe to call from several tasks."""
        async with self._lock:
            if self.returncode is None:
                message, self._buffer = await _read_message(self._status, self._buffer)
                if message is None:  # the fork server died: its children's codes died with it
                    log.warning("sandbox fork server lost a command's exit status", pid=self.pid)
                    await _wait_gone(self.pid)
                    self.returncode = -signal.SIGKILL
                else:
                    self.returncode = int(message["exit"])
                self._status.close()
        return self.returncode


class ForkServer:
    def __init__(self) -> None:
        self._control: trio.socket.SocketType | None = None
        self._process: trio.Process | None = None
        self._starting = trio.Lock()
        self._sending = trio.Lock()  # one spawn message at a time on the control socket

    async def spawn(self, request: dict[str, Any], stdio: Sequence[int]) -> SandboxedProcess:
        """Start a command as ``request`` says, with ``stdio`` (stdin, stdout, stderr fds,
        which stay the caller's to close). OSError when it cannot be started."""
        body = json.dumps(request).encode()
        for attempt in (1, 2):
            control = await self._ensure_started()
            try:
                return await self._spawn(control, body, stdio)
            except _ServerGone:
                await self.aclose()
                if attempt == 2:
                    raise OSError(errno.EPIPE, "the sandbox fork server stopped answering") from None
        raise AssertionError("unreachable")

    async def _spawn(self, control: trio.socket.SocketType, body: bytes, stdio: Sequence[int]) -> SandboxedProcess:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        error_r, error_w = os.pipe2(os.O_CLOEXEC)
        errors = trio.lowlevel.FdStream(error_r)
        status = trio.socket.from_stdlib_socket(mine)
        try:
            try:
                async with self._sending:
                    await control.sendmsg([SPAWN], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno(), error_w, *stdio]))])
            except OSError:
                raise _ServerGone() from None
            finally:
                theirs.close()
                os.close(error_w)
            message, buffered = await _read_message(status, b"")
            if message is None:
                raise _ServerGone()
            pid = int(message["pid"])
            try:
                await _send_all(status, LENGTH.pack(len(body)) + body)
            except OSError:
                pass  # the child is gone already: the error pipe says why
            failure = await _read_all(errors)
        except BaseException:
            status.close()
            raise
        finally:
            await errors.aclose()
        process = SandboxedProcess(pid, status, buffered)
        if failure:
            await process.wait()
            raise _start_error(failure)
        return process

    async def _ensure_started(self) -> trio.socket.SocketType:
        async with self._starting:
            if self._control is None or self._process is None or self._process.returncode is not None:
                await self.aclose()
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    self._process = await trio.lowlevel.open_process(
                        [_interpreter(), "-m", "echsd.tools.sandbox.forkserver", str(theirs.fileno())],
                        pass_fds=(theirs.fileno(),),
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                        env={**os.environ, "PYTHONPATH": _import_path()},
                    )
                finally:
                    theirs.close()
                self._control = trio.socket.from_stdlib_socket(ours)
                daemon_helper(self._process.pid)  # the daemon's own: not a command that escaped
                log.info("sandbox fork server started", pid=self._process.pid)
            return self._control

    async def aclose(self) -> None:
        """Stop the server (it exits when its control socket closes); commands go on."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None:
            with trio.move_on_after(2) as timer:
                await self._process.wait()
            if timer.cancelled_caught:
                self._process.kill()
            self._process = None

    def close_now(self) -> None:
        """Synchronous stop, for shutdown paths outside the event loop."""
        if self._control is not None:
            self._control.close()
            self._control = None


def _interpreter() -> str:
    """This very interpreter: its path, or /proc/self/exe where the path is not ours to walk
    (a daemon run as another user than the one whose directory holds Python). The fork
    server gets the daemon's ``sys.path``, so it imports what the daemon imports either way."""
    return sys.executable if sys.executable and os.access(sys.executable, os.X_OK) else "/proc/self/exe"


def _import_path() -> str:
    """Where the daemon finds its modules: the directory holding ``echsd`` (an editable
    install's finder is a path hook, not a directory) and every directory of ``sys.path``."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(echsd.__file__)))
    return os.pathsep.join(dict.fromkeys([package_root, *(path for path in sys.path if os.path.isdir(path))]))


class _ServerGone(Exception):
    pass


def _start_error(failure: bytes) -> OSError:
    try:
        data = json.loads(failure)
        return OSError(data.get("errno") or errno.EPERM, str(data.get("message")))
    except ValueError:
        return OSError(errno.EPERM, f"the sandbox could not start the command: {failure[:500]!r}")


async def _read_message(sock: trio.socket.SocketType, buffer: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """One newline-terminated JSON message (None at EOF) and what was read past it."""
    while b"\n" not in buffer:
        chunk = await sock.recv(MAX_LINE)
        if not chunk:
            return None, buffer
        buffer += chunk
        if len(buffer) > MAX_LINE:
            raise OSError(errno.EPROTO, "the sandbox fork server sent a malformed message")
    line, _, rest = buffer.partition(b"\n")
    return json.loads(line), rest


async def _send_all(sock: trio.socket.SocketType, data: bytes) -> None:
    view = memoryview(data)
    while view:
        sent = await sock.send(view)
        view = view[sent:]


async def _read_all(stream: trio.lowlevel.FdStream) -> bytes:
    parts = []
    while chunk := await stream.receive_some(65536):
        parts.append(chunk)
    return b"".join(parts)


async def _wait_gone(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)
