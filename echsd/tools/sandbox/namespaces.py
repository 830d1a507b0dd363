"""Private namespaces for one command: its own user, mount and (network off) network.

Made in the sandboxed child before it execs (a process alone in its thread group, as
``unshare(CLONE_NEWUSER)`` requires):

- A user namespace mapping only the caller's own uid and gid to themselves: what the mounts
  below need (CAP_SYS_ADMIN over the new mount namespace), while the command keeps no
  capability over anything outside (root's commands lose their real privileges).
- A mount namespace, so the daemon can pin and protect paths for this command alone:
  ``pin`` makes a path a mount point (it can then be neither renamed nor removed),
  ``bind_readonly`` makes a subtree read-only (EROFS for root too), ``hide`` covers a
  directory with an empty read-only tmpfs or a file with /dev/null. Mounts made here never
  propagate back (``/`` is made a slave first); Landlock then forbids the command to undo
  them (no mount, umount or pivot_root from inside a Landlock domain).
- A network namespace holding only a loopback interface (brought up, so a command may still
  serve and test on 127.0.0.1 inside), for ``network=off``: nothing outside is reachable,
  TCP, UDP or raw.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct

from echsd.tools.sandbox import libc

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_SLAVE = 1 << 19
MS_RELATIME = 1 << 21
ST_RELATIME = 4096  # statvfs's flag; the mount flag differs
# Flags of a mount that a user namespace may not clear when it remounts a bind of it.
_KEPT = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (ST_RELATIME, MS_RELATIME))

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def enter(*, network: bool) -> None:
    """Unshare user and mount namespaces (and the network one unless ``network``), and map
    our own ids to themselves."""
    uid, gid = os.geteuid(), os.getegid()
    libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | (0 if network else CLONE_NEWNET))
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    libc.mount(None, "/", None, MS_REC | MS_SLAVE)
    if not network:
        loopback_up()


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def pin(path: str) -> None:
    """Make ``path`` a mount point of itself: it stays writable, but cannot be renamed,
    removed or replaced (EBUSY) while this mount namespace lives."""
    libc.mount(path, path, None, MS_BIND)


def bind_readonly(path: str) -> None:
    """``path`` (a directory and all beneath it, or a file) becomes read-only here."""
    libc.mount(path, path, None, MS_BIND | MS_REC)
    libc.mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _kept_flags(path))


def hide(path: str) -> None:
    """Cover ``path``: a directory with an empty read-only tmpfs, anything else with
    /dev/null (a unix socket covered so can no longer be connected to)."""
    if os.path.isdir(path) and not os.path.islink(path):
        libc.mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0500")
    else:
        libc.mount("/dev/null", path, None, MS_BIND)


def _kept_flags(path: str) -> int:
    flags = os.statvfs(path).f_flag
    return sum(mount_flag for stat_flag, mount_flag in _KEPT if flags & stat_flag)
