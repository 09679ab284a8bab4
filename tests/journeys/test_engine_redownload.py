"""Engine outputs downloaded again (a CI artifact fetched by the next job, a copy, a touch):
the same bytes carry a new mtime and must store nothing new and print the same ids."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import DATA

from .shell import PERFWARDEN, run

ENGINES = DATA / "engines"
# files whose contents name no year (a vLLM log, a throughput result) and files that do
UNDATED = [["throughput.json"], ["vllm_merged.log"], ["latency.json", "latency.json.commands"],
           ["serve.json", "vllm_merged.log"], ["sglang.log"]]


def ingest(server: str, *files) -> tuple[list[int], str]:
    r = run([PERFWARDEN, "ingest", *map(str, files), "--server", server, "--gpu", "NVIDIA H200",
             "--no-detect"])
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()], r.stderr


@pytest.mark.parametrize("names", UNDATED, ids=lambda n: "+".join(n))
def test_a_redownload_with_a_new_mtime_stores_nothing(served_shared, tmp_path, names):
    served = served_shared
    first_dir, second_dir = tmp_path / "job1", tmp_path / "job2"
    first_dir.mkdir()
    second_dir.mkdir()
    for n in names:
        shutil.copy(ENGINES / n, first_dir / n)
        os.utime(first_dir / n, (1_700_000_000, 1_700_000_000))  # 2023
    inputs = [n for n in names if not n.endswith(".commands")]
    before = len(served.runs())
    first, _ = ingest(served.url, *[first_dir / n for n in inputs])
    stored = served.runs()
    assert len(stored) == before + len(first)
    for n in names:  # the next job downloads the artifact: same bytes, a new mtime, a new path
        shutil.copy(ENGINES / n, second_dir / n)
        os.utime(second_dir / n, (1_800_000_000, 1_800_000_000))  # 2027
    again, _ = ingest(served.url, *[second_dir / n for n in inputs])
    assert again == first
    assert len(served.runs()) == len(stored)
    started = {r["id"]: r["started_at"] for r in served.runs()}
    for rid in first:  # no start taken from either mtime
        assert not started[rid].startswith(("2023", "2027")), started[rid]


def test_a_redownloaded_profile_of_two_phases_stores_nothing(served_shared, tmp_path):
    """SGLang's result and log with its profiler output (a decode set of two ranks, a prefill
    trace of rank 0: two trace groups of the run), downloaded again with new mtimes: the same id,
    the same trace rows and groups, nothing stored twice."""
    from tests.conftest import H200

    served = served_shared
    files = {"sglang_bench_serving.jsonl": ENGINES / "sglang_bench_serving.jsonl",
             "sglang.log": ENGINES / "sglang.log",
             "1764583200123-TP-0-decode.sqlite.gz": H200 / "engines/nsys-joined-eager.sqlite.gz",
             "1764583200123-TP-1-decode.sqlite.gz": H200 / "engines/nsys-joined-graphs.sqlite.gz",
             "1764583200123-TP-0-prefill.sqlite.gz": H200 / "engines/nsys-serial-eager.sqlite.gz"}
    shown = []
    for job, mtime in (("job1", 1_700_000_000), ("job2", 1_800_000_000)):
        d = tmp_path / job
        d.mkdir()
        for name, src in files.items():
            shutil.copy(src, d / name)
            os.utime(d / name, (mtime, mtime))
        paths = [d / n for n in files]
        r = run([PERFWARDEN, "ingest", *map(str, paths[:2]), "--trace", *map(str, paths[2:]),
                 "--server", served.url, "--gpu", "NVIDIA H200", "--no-detect", "--wait", "300"])
        assert r.returncode == 0, r.stderr
        assert "2 trace sets: 3 file(s)" in r.stderr
        (rid,) = [int(x) for x in r.stdout.split()]
        got = served.get(f"/api/v1/runs/{rid}")
        shown.append((rid, [(t["id"], t["sha256"], t["trace_group"], t["phase"], t["state"])
                            for t in got["traces"]], served.runs()))
    (rid, traces, stored), again = shown
    assert [(g, p, s) for _, _, g, p, s in traces] == [
        (0, "decode", "done"), (0, "decode", "done"), (1, "prefill", "done")]
    assert again == (rid, traces, stored)
