"""What a forked child does first: it dies with the process that forked it, and lets go of the
sockets and pipe ends it inherited.

A fork copies every open descriptor: a server's listening socket, its database connection, the
pipes of processes forked before it. A child that outlives its parent (the parent killed with
SIGKILL) and keeps the listening socket keeps the port bound, so the server cannot start again on
it; a child holding the read end of a sibling's pipe keeps that sibling blocked on a write no one
reads. So a child asks the kernel for SIGKILL when the thread that forked it ends
(PR_SET_PDEATHSIG), ends at once where that parent is gone already, and closes every inherited
socket and pipe end but the ones it was given (and standard input, output and error), and
multiprocessing's resource-tracker pipe, which the queues and pools it makes write to."""
from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
from multiprocessing import resource_tracker

PR_SET_PDEATHSIG = 1
_FD_DIR = "/proc/self/fd"


def die_with_parent(parent: int) -> None:
    """SIGKILL to this process when `parent` (the process that forked it) ends; where `parent`
    ended before the request took, exit now. Linux only; elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def inherited(keep: set[int]) -> list[int]:
    """The sockets and pipe ends open here, but `keep` and standard input, output and error."""
    try:
        names = os.listdir(_FD_DIR)
    except OSError:
        return []
    out = []
    for name in names:
        fd = int(name)
        if fd <= 2 or fd in keep:
            continue
        try:
            mode = os.fstat(fd).st_mode
        except OSError:  # the directory's own descriptor, closed by now
            continue
        if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
            out.append(fd)
    return out


def settle(parent: int, keep: set[int], pipes: bool = True) -> None:
    """In a child just forked from `parent`: die with it, and close the inherited sockets (and,
    with `pipes`, pipe ends) but the descriptors in `keep`. A pool's worker keeps its pipes
    (`pipes=False`): its task and result queues are pipes it does not name."""
    die_with_parent(parent)
    # the resource tracker's pipe: closing it would leave multiprocessing writing to a closed
    # (or reused) descriptor the next time this child makes a queue or a pool
    tracker = getattr(resource_tracker._resource_tracker, "_fd", None)
    keep = keep | ({tracker} if isinstance(tracker, int) else set())
    for fd in inherited(keep):
        if not pipes and stat.S_ISFIFO(os.fstat(fd).st_mode):
            continue
        try:
            os.close(fd)
        except OSError:
            pass
