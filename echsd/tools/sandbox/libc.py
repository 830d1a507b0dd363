"""The C library, as the sandbox's kernel interfaces need it: raw syscalls and errors.

Only what Python's ``os`` lacks on 3.11 (``unshare``, ``mount``, ``prctl``, the Landlock
and seccomp syscalls). Every failing call raises ``OSError`` with the errno and the call
named, so a refusal reads as what the kernel said.
"""

from __future__ import annotations

import ctypes
import os
import platform
from typing import Any

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl.restype = ctypes.c_int
libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
libc.unshare.argtypes = (ctypes.c_int,)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)

# Numbers that differ between architectures (Landlock's 444-446 are the same everywhere).
_ARCH = {
    # machine: (AUDIT_ARCH_*, socket, socketpair)
    "x86_64": (0xC000003E, 41, 53),
    "aarch64": (0xC00000B7, 198, 199),
}
MACHINE = platform.machine()
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
SYS_IO_URING_SETUP = 425

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
PR_SET_PDEATHSIG = 1


def arch_numbers() -> tuple[int, int, int] | None:
    """``(audit arch, socket, socketpair)`` for this machine, or None where unknown."""
    return _ARCH.get(MACHINE)


def fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def syscall(number: int, *args: Any, what: str) -> int:
    result = libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        raise fail(what)
    return int(result)


def prctl(option: int, arg2: int = 0, what: str = "prctl") -> None:
    if libc.prctl(option, arg2, 0, 0, 0) != 0:
        raise fail(what)


def set_no_new_privs() -> None:
    """No setuid bit or file capability grants anything from here on (Landlock and seccomp
    require it of a process without CAP_SYS_ADMIN; we set it always)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")


def unshare(flags: int) -> None:
    if libc.unshare(flags) != 0:
        raise fail("unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if libc.mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)) != 0:
        raise fail(f"mount {target}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)
