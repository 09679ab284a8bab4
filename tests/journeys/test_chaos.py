"""An operator's bad night: the server (SQLite, jobs in its process) or the API and its worker
(PostgreSQL) are killed with SIGKILL while a large Kineto trace is analyzed a piece at a time
and an upload is half received. No process they forked is left, the port is free at once, the
restarted server serves on it, the half-received upload's temp file is gone, and the trace
ends `done` once."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from collectors.traces import kineto_split
from tests.collectors.test_forked import _alive

from .shell import PERFWARDEN, env, run
from .test_large_kineto_trace import build

LEASE_S = "4"  # a killed worker's job is taken up again after this


@pytest.fixture(scope="module")
def large_trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("chaos") / "rank0.json"
    build(path, kineto_split.SPLIT_MIN_BYTES + (1 << 20))
    return path


def _children(pid: int) -> list[int]:
    """The processes `pid` forked, from any of its threads."""
    out = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(x) for x in f.read().split()]
    return out


def _tree(pid: int) -> list[int]:
    """The processes below `pid`."""
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


def _start(args: list[str], cwd: Path, log: str, extra: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([PERFWARDEN, *args], cwd=cwd, stdout=open(cwd / log, "ab"),
                            stderr=subprocess.STDOUT, env=env(**extra))


def _answering(url: str, proc: subprocess.Popen, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            urllib.request.urlopen(url + "/api/v1/health", timeout=2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"no answer in {within_s} s")


def _half_upload(port: int) -> socket.socket:
    """A stage request that sends 3 MiB of a declared 64 MiB and stops."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /api/v1/traces/stage?filename=half.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: application/octet-stream\r\nContent-Length: 67108864\r\n\r\n")
    s.sendall(b"[" + b" " * (3 << 20))
    return s


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def _ends(pid: int) -> int:
    """How many sockets and pipe ends `pid` holds, standard input, output and error aside."""
    n = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                n += int(fd) > 2 and os.readlink(f"/proc/{pid}/fd/{fd}").startswith(
                    ("socket:", "pipe:"))
    return n


def _killed_mid_analysis(victim: subprocess.Popen, also: list[subprocess.Popen]) -> list[int]:
    """SIGKILL `victim` (and `also`) while it runs the pieces of a split scan; the processes it
    had forked. The scan of a 49 MB document takes under a second, so each piece is stopped
    (SIGSTOP) the moment it holds its own pipe end alone, having let go of what it inherited
    (the rest 2 s after they were seen), to be killed mid-way for sure."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        below = _tree(victim.pid)
        pieces = [p for p in below if p not in _children(victim.pid)]
        if pieces:
            break
        time.sleep(0.002)
    else:
        raise AssertionError("the analysis never forked its pieces")
    settled, stopped = time.monotonic() + 2, set()
    while len(stopped) < len(pieces) and time.monotonic() < settled:
        for p in set(pieces) - stopped:  # each stopped as soon as it holds its own end alone
            if _ends(p) <= 1:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGSTOP)
                stopped.add(p)
        time.sleep(0.001)
    for p in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGSTOP)
    assert any(map(_alive, pieces)), "the pieces ended before they were stopped"
    for p in [victim, *also]:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    return below


def _killed_leaves_nothing(serve: subprocess.Popen, pids: list[int], port: int) -> None:
    """kill -9 of `serve`: within 10 s none of `pids` is alive and the port binds at once."""
    os.kill(serve.pid, signal.SIGKILL)
    serve.wait()
    deadline = time.monotonic() + 10
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if _alive(p)] == []
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


def test_kill_9_mid_analysis_leaves_no_orphan_and_the_port_serves_at_once(
        settings, large_trace, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    extra = {"PERFWARDEN_DATABASE_URL": settings.database_url, "PERFWARDEN_DATA_DIR": str(data),
             "PERFWARDEN_JOB_LEASE_S": LEASE_S}
    sqlite = settings.database_url.startswith("sqlite")
    serve_args = ["serve", "--port", str(port)]
    api = _start(serve_args, tmp_path, "serve.log", extra)
    procs = [api]
    try:
        _answering(url, api, 120)
        worker = None if sqlite else _start(["worker"], tmp_path, "worker.log", extra)
        procs += [worker] if worker else []
        (tmp_path / "traces").mkdir()
        os.link(large_trace, tmp_path / "traces" / "rank0.json")
        record = {"benchmark": "chaos", "config": {"tp": 1}, "hardware": {"gpu": "H200"},
                  "started_at": "2026-12-01T10:00:00Z", "trace_files": ["traces/rank0.json"],
                  "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                        "samples": [87.7, 87.6, 87.8]}}}
        (tmp_path / "run.json").write_text(json.dumps([record]))
        half = _half_upload(port)
        r = run([PERFWARDEN, "ingest", "run.json", "--server", url], cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        (rid,) = map(int, r.stdout.split())
        victim = api if worker is None else worker
        assert list((data / "tmp").glob("upload-*"))  # the half upload's temp file
        forked = _killed_mid_analysis(victim, [api] if worker else [])
        half.close()
        assert forked, "nothing was forked"
        deadline = time.monotonic() + 5
        while any(map(_alive, forked)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p for p in forked if _alive(p)] == [], [
            (p, Path(f"/proc/{p}/status").read_text()[:400], _ends(p)) for p in forked
            if _alive(p)]

        with socket.socket() as probe:  # the port is free: nothing holds the listening socket
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))
        api = _start(serve_args, tmp_path, "serve.log", extra)
        procs = [api]
        _answering(url, api, 120)
        assert list((data / "tmp").glob("upload-*")) == []  # the half upload's temp file
        if not sqlite:
            procs.append(_start(["worker"], tmp_path, "worker.log", extra))
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            traces = _get(f"{url}/api/v1/runs/{rid}")["traces"]
            if traces[0]["state"] != "pending":
                break
            time.sleep(0.5)
        assert [t["state"] for t in traces] == ["done"], traces
        first = _get(f"{url}/api/v1/runs/{rid}")["trace_summary"]
        time.sleep(2 * float(LEASE_S) + 2)  # the killed process's job is taken up again
        again = _get(f"{url}/api/v1/runs/{rid}")
        assert [t["state"] for t in again["traces"]] == ["done"]
        assert again["trace_summary"] == first and first["steps"] > 200
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_kill_9_of_a_serve_with_worker_processes_frees_the_port(tmp_path):
    """`serve --workers 2`: its worker processes go with it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    extra = {"PERFWARDEN_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}",
             "PERFWARDEN_DATA_DIR": str(tmp_path / "data")}
    serve = _start(["serve", "--port", str(port), "--workers", "2"], tmp_path, "serve.log", extra)
    try:
        _answering(url, serve, 180)
        deadline = time.monotonic() + 60
        while len(_children(serve.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = _tree(serve.pid)
        assert len(workers) >= 2, workers
        _killed_leaves_nothing(serve, workers, port)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def _cpu_s(pids: list[int]) -> float:
    """The CPU seconds (user and system) these processes have used."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_a_reads_server_serves_the_pages_behind_the_api_and_goes_with_it(tmp_path):
    """`serve --workers 2 --read-workers 2`: every page is answered by the reads server's
    processes (they spend the CPU of 30 views of an 80-benchmark home page, the API's processes
    far less), which
    run at nice 10; the gate and writes stay with the API; kill -9 of serve takes every process
    with it, frees the port, and the next start clears the socket folder it left."""
    import glob
    import tempfile

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    extra = {"PERFWARDEN_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}",
             "PERFWARDEN_DATA_DIR": str(tmp_path / "data"), "PERFWARDEN_JOBS_IN_PROCESS": "0"}
    args = ["serve", "--port", str(port), "--workers", "2", "--read-workers", "2"]
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "perfwarden-reads-*")))
    serve = _start(args, tmp_path, "serve.log", extra)
    try:
        _answering(url, serve, 180)
        deadline = time.monotonic() + 60
        while len(_tree(serve.pid)) < 7 and time.monotonic() < deadline:  # 2 + 1 + 2, trackers
            time.sleep(0.1)
        [reads] = [p for p in _children(serve.pid) if "run_reads" in
                   open(f"/proc/{p}/cmdline").read()]
        readers = [reads] + _tree(reads)
        api = [p for p in _tree(serve.pid) if p not in readers]
        assert len(readers) >= 3 and len(api) >= 2, (readers, api)  # and resource trackers
        assert {_nice(p) for p in readers} == {10} and {_nice(p) for p in api} == {0}
        # a home page worth drawing: 80 benchmarks, so drawing a view costs the reads server
        # clearly more than passing it on costs the API (12 did not, on a fast machine)
        runs = [{"benchmark": f"b{i}", "config": {"tp": 1},
                 "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1},
                 "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                       "samples": [100.0, 101.0, 99.0]}}} for i in range(80)]
        req = urllib.request.Request(f"{url}/api/v1/runs/batch",
                                     json.dumps({"runs": runs}).encode(), method="POST",
                                     headers={"content-type": "application/json"})
        assert urllib.request.urlopen(req, timeout=60).status == 201
        cpu_reads, cpu_api = _cpu_s(readers), _cpu_s(api)
        for _ in range(30):
            with urllib.request.urlopen(url + "/", timeout=60) as r:
                page = r.read().decode()
        assert page.count('<tr data-benchmark="') == 80
        spent_reads, spent_api = _cpu_s(readers) - cpu_reads, _cpu_s(api) - cpu_api
        assert spent_reads > 2 * spent_api, (spent_reads, spent_api)
        folders = set(glob.glob(os.path.join(tempfile.gettempdir(), "perfwarden-reads-*")))
        assert len(folders - before) == 1
        _killed_leaves_nothing(serve, readers + api, port)
        # the next start, one process a kind (what it clears does not depend on how many)
        serve = _start(args[:3] + ["--workers", "1", "--read-workers", "1"], tmp_path,
                       "serve.log", extra)
        _answering(url, serve, 180)
        assert not (folders - before) & set(glob.glob(os.path.join(tempfile.gettempdir(),
                                                                    "perfwarden-reads-*")))
    finally:
        if serve.poll() is None:
            serve.terminate()
            serve.wait(60)
