"""Binding the daemon's listening sockets (``--listen``), before anything else starts.

The unix socket is the default door: it is created mode 0600 inside a 0700 directory
(bound under a temporary name, chmod-ed, then renamed into place, so it is never
reachable with looser permissions). A socket file left by a dead daemon is replaced; a
live one (a connect succeeds) means another daemon owns this state dir, and we refuse to
start with one line. A lock file beside the socket (``<socket>.lock``, flock-ed for the
daemon's life) closes the race of two daemons starting at the same moment. TCP listens on the configured (loopback) address; port 0 picks a
free port, which is logged.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import trio

from echsd.errors import Unavailable
from echsd.logs import get_logger
from echsd.settings import ListenAddress

log = get_logger(__name__)

BACKLOG = 128
LIVENESS_TIMEOUT_S = 2.0


class ListenError(Unavailable):
    """An address cannot be listened on (in use by a live daemon, bad path, port taken)."""


@dataclass
class Bound:
    """One listening socket and what it was bound for."""

    listener: trio.SocketListener
    transport: str  # "unix" | "tcp"
    url: str  # what clients connect to, e.g. unix:///path or tcp://127.0.0.1:PORT
    path: Path | None = None
    inode: int | None = None  # of the socket file we created, to remove only ours
    lock_fd: int | None = None

    def close_file(self) -> None:
        """Remove our socket file (not one a newer daemon put in its place), then unlock."""
        if self.path is not None:
            try:
                if os.lstat(self.path).st_ino == self.inode:
                    self.path.unlink()
            except OSError:
                pass
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


async def bind(address: ListenAddress, state_dir: Path) -> list[Bound]:
    if address.kind == "unix":
        assert address.path is not None
        return [await bind_unix(address.path, state_dir)]
    return await bind_tcp(address.host or "127.0.0.1", address.port or 0)


async def _is_live(path: Path) -> bool:
    """Whether a daemon answers on the socket file ``path``."""
    try:
        with trio.fail_after(LIVENESS_TIMEOUT_S):
            stream = await trio.open_unix_socket(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except trio.TooSlowError:
        return True  # something holds it and does not accept: treat it as taken
    except OSError as exc:
        raise ListenError(f"cannot check the socket {path}: {exc.strerror}") from None
    await stream.aclose()
    return True


def _lock(path: Path) -> int:
    """Hold ``<socket>.lock``; another live daemon holding it means we must not start."""
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ListenError(f"another echsd is already running on unix://{path}") from None
    return fd


async def bind_unix(path: Path, state_dir: Path) -> Bound:
    parent = path.parent
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if parent.resolve() == state_dir.resolve():
            os.chmod(parent, 0o700)
        lock_fd = _lock(path)
    except OSError as exc:
        raise ListenError(f"cannot listen on unix://{path}: {exc.strerror}") from None
    try:
        return await _bind_locked(path, lock_fd)
    except BaseException:
        os.close(lock_fd)
        raise


async def _bind_locked(path: Path, lock_fd: int) -> Bound:
    parent = path.parent
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ListenError(f"cannot listen on unix://{path}: {exc.strerror}") from None
    if mode is not None:
        if not stat.S_ISSOCK(mode):
            raise ListenError(f"cannot listen on unix://{path}: the path exists and is not a socket")
        if await _is_live(path):
            raise ListenError(f"another echsd is already running on unix://{path}")
        log.info("replacing stale socket file", path=str(path))
    tmp = parent / f".s{os.getpid()}"
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        tmp.unlink(missing_ok=True)
        await sock.bind(str(tmp))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        sock.listen(BACKLOG)
        inode = os.lstat(path).st_ino
    except OSError as exc:
        sock.close()
        tmp.unlink(missing_ok=True)
        reason = "the path is too long for a unix socket" if exc.errno == errno.ENAMETOOLONG else exc.strerror
        raise ListenError(f"cannot listen on unix://{path}: {reason}") from None
    log.info("listening", url=f"unix://{path}")
    return Bound(trio.SocketListener(sock), "unix", f"unix://{path}", path=path, inode=inode, lock_fd=lock_fd)


async def bind_tcp(host: str, port: int) -> list[Bound]:
    try:
        listeners = await trio.open_tcp_listeners(port, host=host, backlog=BACKLOG)
    except OSError as exc:
        raise ListenError(f"cannot listen on tcp://{host}:{port}: {exc.strerror}") from None
    bound = []
    for listener in listeners:
        address = listener.socket.getsockname()
        shown = f"[{address[0]}]" if ":" in address[0] else address[0]
        url = f"tcp://{shown}:{address[1]}"
        log.info("listening", url=url, port=address[1])
        bound.append(Bound(listener, "tcp", url))
    return bound
