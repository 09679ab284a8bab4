"""The heap of a short command that builds and drops large arrays (`perfwarden analyze`).

glibc gives a block larger than its mmap threshold (at most 32 MB, raised as such blocks are
freed) back to the system when it is freed, so the next array of that size is fresh memory
again and each of its pages costs a first-touch fault; a rank set's analysis makes and drops
hundreds of arrays of tens of MB, in the parent and in each loading process. `keep_freed` makes
this process (and the processes it forks later) take such blocks from its heap and keep what
is freed there for reuse: mallopt's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD. Only a command that
ends soon should: a server would keep its peak. Where the C library is not glibc, nothing
changes."""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>
KEPT_BYTES = 1 << 30  # blocks up to this come from the heap; freed ones stay for reuse


def keep_freed() -> bool:
    """True where glibc took both settings."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt, macOS no libc.so.6)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, KEPT_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, KEPT_BYTES))
