"""The sandbox's fork server: a small single-threaded process that starts confined commands.

The daemon is threaded (trio's worker threads), and a threaded process must not run Python
between fork and exec, nor make a user namespace at all. So it starts this process once
(``python -m echsd.tools.sandbox.forkserver FD``) and asks it for every confined command.
Imports are done once here, so a command costs a fork, not an interpreter start.

Protocol, over the control socket (a SEQPACKET socketpair whose other end the daemon holds):
one message ``spawn`` per command carrying five descriptors: a status socket, the write end
of an error pipe, and the command's stdin, stdout and stderr. The server forks at once and
answers ``{"pid": N}`` on the status socket; the child reads its request (length-prefixed
JSON: argv, env, cwd, policy, mechanism, cgroup, tty) from that socket, makes itself a
session leader, enters its cgroup, takes its terminal, confines itself (``confine.py``) and
execs. Anything failing before the exec is written to the error pipe (which the exec closes,
so an empty pipe means the command runs) and the child exits 127. When a child ends, the
server sends ``{"exit": code}`` (negative: killed by that signal) on its status socket.
With a PID namespace (the ``pidns`` containment), the child stays as the namespace's
leader, as ``unshare --fork --kill-child`` would: it forks the command as pid 1, which dies
with it, and exits as the command did.

The server exits when the daemon closes the control socket or dies.
"""

from __future__ import annotations

import array
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import sys
import termios
from typing import Any, NoReturn

from echsd.tools.sandbox import libc, namespaces
from echsd.tools.sandbox.confine import Mechanism, confine, isolate, restrict
from echsd.tools.sandbox.policy import SandboxPolicy

SPAWN = b"spawn"
FDS_PER_SPAWN = 5
LENGTH = struct.Struct("!I")
MAX_REQUEST = 64 * 1024 * 1024
FAILED_BEFORE_EXEC = 127
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP)


def serve(control: socket.socket) -> None:
    """Serve ``spawn`` requests until the control socket closes."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                try:
                    message, fds = _receive(control)
                except ConnectionError:
                    message, fds = b"", []
                if not message:
                    return  # the daemon is gone; running commands go on in their enclosures
                _spawn(message, fds, control, children)
            else:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
        _reap(children)


def _receive(control: socket.socket) -> tuple[bytes, list[int]]:
    """One message and its descriptors, close-on-exec (``socket.recv_fds`` of Python 3.11
    drops its flags, and an inherited error pipe would never report the exec)."""
    fds = array.array("i")
    message, ancillary, _flags, _address = control.recvmsg(64, socket.CMSG_LEN(FDS_PER_SPAWN * fds.itemsize), socket.MSG_CMSG_CLOEXEC)
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def _spawn(message: bytes, fds: list[int], control: socket.socket, children: dict[int, socket.socket]) -> None:
    if message != SPAWN or len(fds) != FDS_PER_SPAWN:
        for fd in fds:
            os.close(fd)
        return
    status_fd, error_fd, *stdio = fds
    pid = os.fork()
    if pid == 0:
        _child(status_fd, error_fd, stdio)
    for fd in (error_fd, *stdio):
        os.close(fd)
    status = socket.socket(fileno=status_fd)
    children[pid] = status
    _send(status, {"pid": pid})


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        status = children.pop(pid, None)
        if status is not None:
            _send(status, {"exit": os.waitstatus_to_exitcode(wait_status)})
            status.close()


def _send(status: socket.socket, message: dict[str, Any]) -> None:
    try:
        status.sendall(json.dumps(message).encode() + b"\n", socket.MSG_NOSIGNAL)
    except OSError:
        pass  # the daemon stopped waiting for this command


def _child(status_fd: int, error_fd: int, stdio: list[int]) -> NoReturn:
    """In the forked child: never returns, never raises."""
    try:
        signal.set_wakeup_fd(-1)
        for signum in RESET_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        request = _read_request(status_fd)
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        _close_all_but(error_fd)
        _start(request, error_fd)
    except BaseException as exc:  # noqa: BLE001 -- report it and leave, whatever it was
        _report(error_fd, exc)
    os._exit(FAILED_BEFORE_EXEC)


def _read_request(fd: int) -> dict[str, Any]:
    head = _read_exactly(fd, LENGTH.size)
    (size,) = LENGTH.unpack(head)
    if size > MAX_REQUEST:
        raise ValueError(f"request of {size} bytes")
    return json.loads(_read_exactly(fd, size))


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the daemon closed the request")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _close_all_but(keep: int) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _start(request: dict[str, Any], error_fd: int) -> NoReturn:
    os.setsid()
    if request.get("cgroup_procs"):
        with open(request["cgroup_procs"], "w") as procs:
            procs.write(str(os.getpid()))
    if request.get("tty"):
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    policy = SandboxPolicy.from_json(request["policy"])
    mechanism = Mechanism(**request["mechanism"])
    if request.get("pid_namespace"):
        _lead_pid_namespace(request, policy, mechanism, error_fd)
    confine(policy, mechanism, tty_path=request.get("tty_path"))
    _exec(request)


def _lead_pid_namespace(request: dict[str, Any], policy: SandboxPolicy, mechanism: Mechanism, error_fd: int) -> NoReturn:
    """Stay as the leader of a new PID namespace whose pid 1 is the command, confined."""
    plan = isolate(policy, mechanism)
    libc.unshare(namespaces.CLONE_NEWPID)
    init = os.fork()
    if init == 0:
        try:
            libc.prctl(libc.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl(PR_SET_PDEATHSIG)")
            restrict(policy, mechanism, plan, tty_path=request.get("tty_path"))
            _exec(request)
        except BaseException as exc:  # noqa: BLE001 -- report it and leave, whatever it was
            _report(error_fd, exc)
        os._exit(FAILED_BEFORE_EXEC)
    os.close(error_fd)
    _, wait_status = os.waitpid(init, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    if code < 0:
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code & 0xFF)


def _exec(request: dict[str, Any]) -> NoReturn:
    os.chdir(request["cwd"])
    os.execvpe(request["argv"][0], request["argv"], request["env"])


def _report(error_fd: int, exc: BaseException) -> None:
    text = json.dumps({"errno": getattr(exc, "errno", None), "message": f"{exc}" or type(exc).__name__})
    try:
        os.write(error_fd, text.encode())
    except OSError:
        pass


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when we stop
    control = socket.socket(fileno=int(argv[1]))
    try:
        serve(control)
    finally:
        control.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
