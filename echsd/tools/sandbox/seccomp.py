"""A seccomp filter that keeps a process off the network: sockets of the unix family only.

The fallback for ``network=off`` where no private network namespace can be made (user
namespaces refused): Landlock's TCP rules deny ``bind``/``connect`` on TCP, and this filter
makes ``socket()`` fail with EPERM for every family but ``AF_UNIX`` (so UDP, raw sockets
and the rest are refused too), refuses ``io_uring_setup`` (whose operations would bypass
syscall filtering), and refuses every syscall made through another architecture's entry
(x32, i386 compat), which the filter could not read correctly.

A classic BPF program over ``struct seccomp_data``, installed with ``prctl``; inherited
across fork and exec like Landlock, and irremovable.
"""

from __future__ import annotations

import ctypes
import errno
import socket

from echsd.tools.sandbox import libc

SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_X32_SYSCALL_BIT = 0x40000000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def socket_filter_program() -> list[tuple[int, int, int, int]]:
    """The instructions ``(code, jt, jf, k)``; jumps are relative to the next one."""
    numbers = libc.arch_numbers()
    if numbers is None:
        raise OSError(errno.ENOTSUP, f"no seccomp socket filter for architecture {libc.MACHINE}")
    arch, sys_socket, sys_socketpair = numbers
    deny = RET_ERRNO | errno.EPERM
    return [
        (_LD_W_ABS, 0, 0, _ARCH),  # 0
        (_JEQ_K, 1, 0, arch),  # 1: native arch: on to 3
        (_RET_K, 0, 0, deny),  # 2
        (_LD_W_ABS, 0, 0, _NR),  # 3
        (_JGE_K, 6, 0, _X32_SYSCALL_BIT),  # 4: -> 11 deny
        (_JEQ_K, 5, 0, libc.SYS_IO_URING_SETUP),  # 5: -> 11 deny
        (_JEQ_K, 1, 0, sys_socket),  # 6: -> 8
        (_JEQ_K, 0, 2, sys_socketpair),  # 7: -> 8, else -> 10 allow
        (_LD_W_ABS, 0, 0, _ARG0),  # 8: the family
        (_JEQ_K, 0, 1, socket.AF_UNIX),  # 9: unix -> 10 allow, else -> 11 deny
        (_RET_K, 0, 0, RET_ALLOW),  # 10
        (_RET_K, 0, 0, deny),  # 11
    ]


def install_socket_filter() -> None:
    """Install the filter on the calling thread (no_new_privs must be set first)."""
    program = socket_filter_program()
    filters = (_Filter * len(program))(*[_Filter(*ins) for ins in program])
    prog = _Program(len(program), filters)
    if libc.libc.prctl(libc.PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        raise libc.fail("prctl(PR_SET_SECCOMP)")

