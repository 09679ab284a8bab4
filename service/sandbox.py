"""The process every trace analysis runs in (upload job, run page, timeline): forked, at the
lowest CPU priority, in a process group of its own, with a wall-clock deadline, address-space
and CPU-time limits and caps on inflated gzip data. Past any of them, the analysis is a
TraceError, final: the same file would break the same limit again."""
from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing as mp
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from collectors import forked
from collectors.traces import TraceError
from collectors.traces.gz import MAX_INFLATED_ENV, MAX_RATIO_ENV

from .config import Settings

DEADLINE_BASE_S = 60.0  # the default deadline of an analysis: this, plus
DEADLINE_BYTES_S = 1e6  # one second per this many bytes of its files
CPU_PER_DEADLINE = 4  # the default CPU-time limit: this many times the deadline
T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sandbox:
    """The limits of an analysis process (Settings.analysis_*, max_inflate*): a wall-clock
    deadline, an address-space limit and a CPU-time limit on it, caps on inflated gzip data."""

    timeout_s: float | None = None
    memory_mb: int | None = None
    cpu_s: float | None = None
    max_inflated_bytes: int = 32 << 30
    max_inflate_ratio: float = 100.0

    @classmethod
    def of(cls, s: Settings) -> Sandbox:
        return cls(s.analysis_timeout_s, s.analysis_memory_mb, s.analysis_cpu_s,
                   s.max_inflated_bytes, s.max_inflate_ratio)

    def deadline_s(self, nbytes: int) -> float:
        return self.timeout_s or DEADLINE_BASE_S + nbytes / DEADLINE_BYTES_S

    def memory_bytes(self) -> int:
        if self.memory_mb:
            return self.memory_mb << 20
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2

    def cpu_limit_s(self, nbytes: int) -> int:
        return int(self.cpu_s or CPU_PER_DEADLINE * self.deadline_s(nbytes)) + 1

    def enter(self, nbytes: int) -> None:
        """In the analysis process: its limits (its forked pieces inherit them)."""
        # the cap is what the analysis may map beyond what it was forked with: a parent that
        # has mapped much already (a server with torch loaded, many threads' stacks) must not
        # leave the child no room at all
        mem = _mapped_bytes() + self.memory_bytes()
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = self.cpu_limit_s(nbytes)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.environ[MAX_INFLATED_ENV] = str(self.max_inflated_bytes)
        os.environ[MAX_RATIO_ENV] = repr(self.max_inflate_ratio)


def _mapped_bytes() -> int:
    """This process's address space now (Linux), 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _lowest_priority() -> None:
    """The analysis process's CPU class: SCHED_IDLE runs only where no other process wants the
    core, so gate requests, ingest and the database go first. (Nice 10 alone, as the worker
    runs, still let a parse take most of a core beside busy API workers: measured 60-80 ms of
    every 100 ms while gate requests waited.)"""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        os.nice(19)


def _child(out: Any, work: Callable[[], Any], parent: int, sandbox: Sandbox,
           nbytes: int, idle: bool) -> None:
    """The forked analysis: a process group of its own (its pieces in it, so a failure is ended
    whole), killed with the worker or server that forked it (PR_SET_PDEATHSIG) and holding none
    of its sockets (the listening one, database connections) or pipe ends but `out`
    (collectors/forked.py), at the lowest CPU priority where `idle`
    (a job) and at the caller's where not (a page a user waits for: at SCHED_IDLE a parse
    beside two busy cores waited minutes), under the sandbox's limits, none of the
    parent's objects collected (their finalizers may want locks or sockets of the server's
    threads), and an exit that skips the interpreter's shutdown."""
    gc.freeze()
    try:
        os.setpgid(0, 0)
        # pipe ends stay (multiprocessing in the analysis relies on them); sockets go
        forked.settle(parent, {out.fileno()}, pipes=False)
        if idle:
            _lowest_priority()
        sandbox.enter(nbytes)
        try:
            out.send(("ok", work()))
        except TraceError as e:
            out.send(("trace", str(e)))
        except MemoryError:
            out.send(("trace", f"refused: the analysis ran out of memory (its limit: "
                               f"{sandbox.memory_bytes() >> 20:,} MB, "
                               "PERFWARDEN_ANALYSIS_MEMORY_MB)"))
        except BaseException as e:  # noqa: BLE001 - named to the caller, who raises it
            out.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        os._exit(0)


def _death(code: int | None, sandbox: Sandbox, nbytes: int) -> str | None:
    """Why an analysis process that a signal ended is refused for good (it would end the same
    way again); None for an exit that says nothing of the trace."""
    if code is None or code >= 0:
        return None
    if -code == signal.SIGXCPU:
        return (f"refused: the analysis ran past its CPU-time limit of "
                f"{sandbox.cpu_limit_s(nbytes)} s (PERFWARDEN_ANALYSIS_CPU_S)")
    if -code == signal.SIGKILL:
        return "refused: the analysis process was killed (signal 9: out of memory?)"
    return f"refused: the analysis process died of signal {-code}"


class _CpuWaits:
    """How long an analysis (its process, the pieces it forked and theirs) waited for a core
    since the last look: the largest such wait of any one of them (its pieces wait side by
    side), and how long all of them have slept using no CPU (`asleep_s`: blocked). The
    deadline stops for the waits: at SCHED_IDLE beside busy cores a parse of a fraction of a second
    waited past a 60 s deadline and was refused for good. A process waits while it is runnable
    and not running: the time it was seen runnable less the CPU time it got (/proc/PID/stat).
    (The kernel's run-queue delay in /proc/PID/schedstat is only added when the wait ends, so a
    long wait reads as none until it is over.) A process that sleeps or spins is not waiting, so
    a hang still meets the deadline and a loop the CPU limit."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[float, float]] = {}  # pid -> (when, its CPU time then)
        self.cpu: dict[int, float] = {}  # pid -> the CPU time it had used when last seen
        self.asleep_s = 0.0  # how long all of them have slept (S) without using any CPU
        self._look: float | None = None  # when they were last looked at
        # processes whose tick rounding was taken off once: the CPU time read is at most a
        # tick or two behind at any look, so that error does not add up over looks (taking it
        # off every half second ended a 1 s deadline after 12 s of waiting for a core)
        self._charged: set[int] = set()

    def more_s(self, pid: int | None) -> float:
        if pid is None:
            return 0.0
        now, rise = time.monotonic(), 0.0
        asleep, seen = True, 0  # every process asleep since the last look, none of them new
        for p in _tree(pid):
            got = _state_and_cpu(p)
            if got is None:
                continue
            state, cpu = got
            when, last = self._seen.get(p, (now, cpu))
            self.cpu[p] = cpu
            if state == "R":  # less two clock ticks, once: CPU time is counted in whole ticks
                slack = 0.0 if p in self._charged else 2 / os.sysconf("SC_CLK_TCK")
                self._charged.add(p)
                rise = max(rise, (now - when) - (cpu - last) - slack)
            asleep = asleep and state == "S" and cpu == last and p in self._seen
            seen += 1
            self._seen[p] = (now, cpu)
        asleep = asleep and seen > 0 and self._look is not None
        self.asleep_s = self.asleep_s + (now - cast(float, self._look)) if asleep else 0.0
        self._look = now
        return rise


def _state_and_cpu(pid: int) -> tuple[str, float] | None:
    """`pid`'s scheduler state letter and its CPU time in seconds (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (an analysis, the pieces it forked, theirs)."""
    out, i = [pid], 0
    while i < len(out) and len(out) < 1024:
        out += _children(out[i])
        i += 1
    return out


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


STUCK_CPU_SHARE = 0.02  # past its deadline having used less CPU than this share of it: stuck
STUCK_MIN_DEADLINE_S = 5.0  # deadlines this long or longer are tried again once when stuck
STUCK_ASLEEP_S = 3.0  # a first try whose processes all slept this long, using no CPU: stuck


class _Stuck(TraceError):
    """Blocked, not parsing: asleep without using CPU (`asleep`), or past the deadline having
    hardly run."""

    def __init__(self, message: str, asleep: bool = False):
        super().__init__(message)
        self.asleep = asleep


def sandboxed(work: Callable[[], T], nbytes: int, sandbox: Sandbox | None = None,
              idle: bool = True) -> T:
    """`work` in a sandboxed process (_sandboxed_once). A process forked beside the server's
    threads can inherit a lock one of them held at that moment (SQLite's own mutexes, which an
    nsys export's reader takes too; the allocator's) and wait on it for ever, which the file
    has no part in. A parse never sleeps: a first try whose processes all sleep for
    STUCK_ASLEEP_S using no CPU, or that ends its deadline having used almost none (less than
    STUCK_CPU_SHARE of it), was blocked rather than parsing. It is forked again once, under the
    deadline alone; a second such end is final."""
    box = sandbox or Sandbox()
    try:
        return _sandboxed_once(work, nbytes, box, idle, STUCK_ASLEEP_S)
    except _Stuck as e:
        if not e.asleep and box.deadline_s(nbytes) < STUCK_MIN_DEADLINE_S:
            raise TraceError(str(e)) from None
        log.warning("a trace analysis was blocked (%s); trying it once more", e)
    try:
        return _sandboxed_once(work, nbytes, box, idle, None)
    except _Stuck as e:
        raise TraceError(str(e)) from None


def _sandboxed_once(work: Callable[[], T], nbytes: int, box: Sandbox, idle: bool,
                    asleep_s: float | None) -> T:
    """`work` in a process of its own, forked for it on Linux (as the rank-set loader forks) at
    the lowest CPU priority (with
    `idle`; without, at the caller's: a request a user waits for), under the
    sandbox's limits and deadline (`nbytes`: the size of the files it reads, which scales the
    defaults); single-threaded, it may fork its pieces, and its memory is returned when it
    ends. Past the deadline, a limit or a cap, or ended by a signal: TraceError (final, not
    worth retrying); asleep without using CPU for `asleep_s`: _Stuck at once. Elsewhere (no
    fork that is safe beside threads, no SCHED_IDLE, no rlimits) it runs here."""
    if not sys.platform.startswith("linux"):
        return work()
    deadline = box.deadline_s(nbytes)
    end = time.monotonic() + deadline
    waits = _CpuWaits()
    ctx = mp.get_context("fork")
    got, out = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(out, work, os.getpid(), box, nbytes, idle))
    proc.start()
    out.close()
    kind, value = "died", cast(Any, None)
    try:  # its pieces hold the pipe (and its sentinel) too: a child that died is its exit
        while not got.poll(max(0.0, min(0.5, end - time.monotonic()))):
            if not proc.is_alive():
                break
            end += waits.more_s(proc.pid)  # time spent waiting for a core is not late
            if asleep_s is not None and waits.asleep_s >= asleep_s:
                kind = "asleep"
                break
            if time.monotonic() >= end:
                kind = "late"
                break
        if kind not in ("late", "asleep") and got.poll():
            kind, value = got.recv()
    except EOFError:
        pass
    finally:
        got.close()
        proc.join(0 if kind in ("late", "asleep") else 5)
        if kind in ("died", "late", "asleep") or proc.exitcode is None:
            assert proc.pid is not None  # started; never 0 (that would be this process's group)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group it made: its pieces
            proc.join()
    if kind == "asleep":
        raise _Stuck(f"asleep for {waits.asleep_s:.3g} s using no CPU", asleep=True)
    if kind == "late":
        late = _Stuck if sum(waits.cpu.values()) < STUCK_CPU_SHARE * deadline else TraceError
        raise late(f"refused: the analysis ran past its deadline of {deadline:.3g} s "
                   "(PERFWARDEN_ANALYSIS_TIMEOUT_S)")
    if kind == "died":
        why = _death(proc.exitcode, box, nbytes)
        if why:
            raise TraceError(why)
        raise RuntimeError(f"the trace analysis process died (exit code {proc.exitcode})")
    if kind == "trace":
        raise TraceError(value)
    if kind == "error":
        raise RuntimeError(f"trace analysis failed: {value}")
    return cast(T, value)
