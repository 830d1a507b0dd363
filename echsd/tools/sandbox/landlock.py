"""Landlock over ctypes: the kernel's unprivileged access control, three syscalls.

A ruleset names the access rights it *handles*; once a process restricts itself with it,
every handled right is denied except where a rule grants it (beneath a directory, on a
file, or on a TCP port). Restrictions are inherited by every child across fork and exec
and can only be narrowed, never lifted, so a command and all it starts (``setsid``, double
forks, daemons) stay confined. Root is confined like anyone: Landlock does not look at
file modes or capabilities.

What each ABI added (``abi_version``): 1 filesystem rights; 2 ``REFER`` (linking and
renaming across directories); 3 ``TRUNCATE``; 4 TCP ``BIND``/``CONNECT`` rules; 5
``IOCTL_DEV``; 6 scoping (abstract unix sockets and signals stay within the domain); 7
audit-logging flags. ``Ruleset`` masks what it is asked to handle by the running ABI, so the
same policy works on every kernel that has Landlock, enforcing what that kernel can.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

from echsd.tools.sandbox import libc

LANDLOCK_CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

# Filesystem rights (``LANDLOCK_ACCESS_FS_*``).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

# Network rights (``LANDLOCK_ACCESS_NET_*``, ABI 4) and scopes (``LANDLOCK_SCOPE_*``, ABI 6).
BIND_TCP = 1 << 0
CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the rights a rule on a non-directory may grant
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def abi_version() -> int:
    """The running kernel's Landlock ABI: 0 where there is none (not built in, or disabled
    at boot: ``lsm=`` without landlock)."""
    try:
        return libc.syscall(libc.SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION), what="landlock_create_ruleset")
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0
        raise


def fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows."""
    return _FS_BY_ABI[min(max(abi, 1), 5)] if abi else 0


def _attr_size(abi: int) -> int:
    """The ruleset attribute as the ABI knows it (net from 4, scoped from 6)."""
    return 8 if abi < 4 else 16 if abi < 6 else 24


class Ruleset:
    """A ruleset being built: ``allow_path`` / ``allow_port`` add rules, ``restrict_self``
    applies it to the calling thread (and, being inherited, to what it execs)."""

    def __init__(self, abi: int, *, fs: int, net: int = 0, scoped: int = 0) -> None:
        if abi < 1:
            raise OSError(errno.EOPNOTSUPP, "Landlock is not available on this kernel")
        self.abi = abi
        self.fs = fs & fs_rights(abi)
        self.net = net if abi >= 4 else 0
        self.scoped = scoped if abi >= 6 else 0
        attr = _RulesetAttr(self.fs, self.net, self.scoped)
        self.fd = libc.syscall(
            libc.SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(_attr_size(abi)), ctypes.c_uint32(0), what="landlock_create_ruleset"
        )

    def allow_path(self, path: str, access: int) -> bool:
        """Grant ``access`` (masked by what is handled) beneath ``path``, or on it if it is
        not a directory (where only file rights apply). False if ``path`` does not exist."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
            allowed = access & self.fs & (~0 if is_dir else FILE_RIGHTS)
            if not allowed:
                return True
            attr = _PathBeneathAttr(allowed, fd)
            libc.syscall(libc.SYS_LANDLOCK_ADD_RULE, self.fd, RULE_PATH_BENEATH, ctypes.byref(attr), ctypes.c_uint32(0), what=f"landlock_add_rule {path}")
            return True
        finally:
            os.close(fd)

    def allow_port(self, port: int, access: int) -> None:
        if not self.net:
            return
        attr = _NetPortAttr(access & self.net, port)
        libc.syscall(libc.SYS_LANDLOCK_ADD_RULE, self.fd, RULE_NET_PORT, ctypes.byref(attr), ctypes.c_uint32(0), what=f"landlock_add_rule port {port}")

    def restrict_self(self) -> None:
        """Enforce the ruleset on this thread (no_new_privs must be set first) and close it."""
        try:
            libc.syscall(libc.SYS_LANDLOCK_RESTRICT_SELF, self.fd, ctypes.c_uint32(0), what="landlock_restrict_self")
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
