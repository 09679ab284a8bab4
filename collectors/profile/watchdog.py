"""Run a command in its own process group under a time limit; past it, the whole group goes
(SIGTERM, then SIGKILL), so a hung profile pass cannot keep its ranks alive. The command is
exec'd, or, where the caller has already imported what it runs (`entry`), forked from the caller
and run in place of the exec, in a process group of its own all the same."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from .. import forked

KILL_WAIT_S = 10.0
POLL_S = 0.05


class Forked:
    """A child forked to run `entry` (its exit status: 0 when entry returns, 1 when it raises,
    the traceback in its output), with what run_watched asks of a process: pid, poll, wait."""

    def __init__(self, entry: Callable[[], object], out: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.setsid()
                os.dup2(out, 1)
                os.dup2(out, 2)
                # the output goes to the log whatever the caller had put in their place
                sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
                forked.settle(parent, set())
                entry()
                code = 0
            except BaseException:  # noqa: BLE001 - the child's status and its output say it
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"forked {self.pid}", timeout or 0.0)
            time.sleep(POLL_S)
        assert self.returncode is not None
        return self.returncode


def run_watched(cmd: list[str], timeout: float, label: str, log: Path,
                entry: Callable[[], object] | None = None) -> tuple[int, str]:
    """Run `cmd` in a new process group with its output in `log` (with `entry`: fork and call it
    instead, the same work without importing it all again); on timeout stop the whole group
    (SIGTERM, then SIGKILL) and raise one line naming the pass. Returns (exit code, last lines)."""
    with open(log, "wb") as fh:
        p: subprocess.Popen | Forked = (
            Forked(entry, fh.fileno()) if entry is not None else
            subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True))
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(p)
            raise RuntimeError(f"{label} stopped by the watchdog after {timeout:g} s (no exit; its "
                               f"process group was killed; output in {log})") from None
        except BaseException:
            kill_group(p)
            raise
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return rc, " | ".join(lines[-3:]) or "no output"


def kill_group(p: subprocess.Popen | Forked) -> None:
    """SIGTERM to the whole process group, SIGKILL after 10 s if any member is still there."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + KILL_WAIT_S
        while time.monotonic() < deadline:
            if p.poll() is not None and not _group_alive(p.pid):
                return
            time.sleep(0.2)
    p.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False
