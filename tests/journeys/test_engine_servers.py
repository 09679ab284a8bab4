"""Twenty engine files of several servers (SGLang and vLLM logs of other TP sizes, models and
settings, `vllm bench` results) ingested as their CI jobs hand them over, with no identity flag:
as many series as there are workloads, a warning naming the identity that is missing, and a second
download of the same files (new mtimes) stores nothing."""
from __future__ import annotations

import os
import shutil

from tests.conftest import DATA

from .shell import PERFWARDEN, run

SERVERS = DATA / "engines" / "servers"
# (files of one ingest, the workload they measure, what identity is missing)
INGESTS = [
    (["sglang_tp2_qwen3.log", "sglang_tp2_qwen3_c8.jsonl"], "qwen3 tp2 c8", ()),
    (["sglang_tp2_qwen3.log", "sglang_tp2_qwen3_c32.jsonl"], "qwen3 tp2 c32", ()),
    (["sglang_tp4_eagle3.log", "sglang_tp4_eagle3.jsonl"], "llama70b tp4 eagle3 c16", ()),
    (["sglang_tp2_qwen3.log"], "qwen3 tp2 server", ()),
    (["sglang_tp4_eagle3.log"], "llama70b tp4 eagle3 server", ()),
    (["sglang_swa_dp2.log"], "gpt-oss dp2 tp2 server", ()),
    (["vllm_gptoss120b_tp4.log", "vllm_gptoss120b_c1.json"], "gpt-oss-120b tp4 c1", ()),
    (["vllm_gptoss120b_tp4.log", "vllm_gptoss120b_c16.json"], "gpt-oss-120b tp4 c16", ()),
    (["vllm_gptoss120b_tp4.log"], "gpt-oss-120b tp4 server", ()),
    (["vllm_qwen7b_tp2.log", "vllm_qwen7b_r1.json"], "qwen7b tp2 seqs128 c8", ()),
    (["vllm_qwen7b_tp2.log", "vllm_qwen7b_r2.json"], "qwen7b tp2 seqs128 c8", ()),
    (["vllm_qwen7b_tp2_seqs32.log", "vllm_qwen7b_seqs32.json"], "qwen7b tp2 seqs32 c8", ()),
    (["vllm_qwen7b_tp2.log"], "qwen7b tp2 seqs128 server", ()),
    (["vllm_qwen7b_tp2_seqs32.log"], "qwen7b tp2 seqs32 server", ()),
    (["vllm_prodstack.log"], "production stack server", ("model", "tp")),
    (["vllm_v0_tp8_glm.log"], "glm tp8 server", ()),
    (["vllm_llama8b_nolog.json"], "llama8b c4", ("tp",)),
    (["vllm_qwen7b_latency.json"], "qwen7b tp2 latency bs8", ()),
    (["vllm_qwen7b_throughput.json"], "qwen7b throughput", ("model", "tp")),
]


def ingest(server: str, folder, names) -> tuple[list[int], list[str]]:
    r = run([PERFWARDEN, "ingest", *[str(folder / n) for n in names], "--server", server,
             "--no-detect"])
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()], r.stderr.splitlines()


def download(dest, mtime: int):
    dest.mkdir()
    for p in SERVERS.iterdir():
        shutil.copy(p, dest / p.name)
        os.utime(dest / p.name, (mtime, mtime))
    return dest


def test_servers_keep_their_series_and_a_redownload_stores_nothing(served, tmp_path):
    assert len(list(SERVERS.iterdir())) == 20
    first = download(tmp_path / "job1", 1_764_000_000)
    ids = []
    for names, _, missing in INGESTS:
        got, stderr = ingest(served.url, first, names)
        assert len(got) == 1, (names, got)
        ids.append(got[0])
        # one line naming exactly what is unknown and the flags to give
        # (no GPU model: --no-detect; no GPU count where tp is unknown)
        unknown = missing + ("gpu",) + (("gpu_count",) if "tp" in missing else ())
        (line,) = [w for w in stderr if "its series says so" in w]
        assert f"{', '.join(unknown)} unknown" in line, (names, line)
        assert line.endswith("(give " + " ".join(
            [f"--config {k}=..." for k in missing] + ["--gpu"] + (
                ["--gpu-count"] if "tp" in missing else [])) + ")"), line
    runs = {r["id"]: r for r in served.runs()}
    series = {}
    for rid, (_, workload, _) in zip(ids, INGESTS):
        series.setdefault(workload, set()).add(runs[rid]["series_id"])
    assert all(len(s) == 1 for s in series.values()), series
    assert len({s for v in series.values() for s in v}) == len(series) == 18
    by = dict(zip([w for _, w, _ in INGESTS], (runs[i] for i in ids)))
    assert by["qwen3 tp2 c8"]["config"]["tp"] == 2
    assert by["qwen3 tp2 c8"]["config"]["model"] == "Qwen3ForCausalLM"
    assert by["llama70b tp4 eagle3 c16"]["config"]["speculative"] == \
        "EAGLE3:4@jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-70B"
    assert by["gpt-oss dp2 tp2 server"]["config"]["dp"] == 2
    assert by["qwen7b tp2 seqs32 c8"]["config"]["max_num_seqs"] == 32
    logs = ("qwen3 tp2 server", "llama70b tp4 eagle3 server", "gpt-oss dp2 tp2 server")
    kv = {w: served.get(f"/api/v1/runs/{by[w]['id']}")["metrics"]["kv_capacity_tokens"]["mean"]
          for w in logs}
    assert kv == {"qwen3 tp2 server": 1362340, "llama70b tp4 eagle3 server": 527104,
                  "gpt-oss dp2 tp2 server": 186880}

    # the next job downloads the same artifacts: new mtimes, a new folder
    again = download(tmp_path / "job2", 1_800_000_000)
    count = len(runs)
    for (names, _, _), rid in zip(INGESTS, ids):
        got, _ = ingest(served.url, again, names)
        assert got == [rid], names
    assert len(served.runs()) == count
