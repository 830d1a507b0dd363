"""The daemon process's C allocator: large blocks go back to the system when freed.

glibc's malloc serves a block of ``M_MMAP_THRESHOLD`` bytes or more (128 KiB at first) with
a mapping of its own, unmapped when freed. But the threshold is dynamic: each time such a
block is freed, the threshold rises to its size (up to 32 MiB), so from then on blocks of
that size come from the heap and stay with the process after they are freed. A daemon that
once built a few large answers (a thread's history read by several app-server clients, each
answer a 10 MB string) kept the memory of all of them for good: measured, 4.2 GB held after
the clients had left. Setting the threshold fixes it (mallopt turns the dynamic adjustment
off), so a block of ``MMAP_THRESHOLD`` or more is always its own mapping, returned when
freed; smaller ones stay on the heap, as before. Only ``echsd serve`` does this (an
embedding program's process is not ours), and only where the C library is glibc.
"""

from __future__ import annotations

import ctypes

from echsd.logs import get_logger

log = get_logger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 1024 * 1024


def tune() -> bool:
    """At the start of the process; whether the allocator took it (False: not glibc)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    taken = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    if not taken:
        log.warning("malloc kept its dynamic mmap threshold: memory of large freed blocks may stay with the daemon")
    return taken
