"""Run a command in its own process group under a time limit; past it, the whole group goes
(SIGTERM, then SIGKILL), so a hung profile pass cannot keep its ranks alive."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

KILL_WAIT_S = 10.0


def run_watched(cmd: list[str], timeout: float, label: str, log: Path) -> tuple[int, str]:
    """Run `cmd` in a new process group with its output in `log`; on timeout stop the whole group
    (SIGTERM, then SIGKILL) and raise one line naming the pass. Returns (exit code, last lines)."""
    with open(log, "wb") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
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


def kill_group(p: subprocess.Popen) -> None:
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
