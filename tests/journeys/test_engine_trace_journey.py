"""Journey: a vLLM user attaches the server's own profiler output to a `vllm bench serve`
result at ingest, then sees the detected steps and the ordering check on the run page, in
/compare and in the PR comment (spec/api.md, Engine traces at ingest; spec/metrics.md, Steps in real
engines' traces to Stream waits in Kineto traces).

The traces are the H200 captures of data/h200/engines (vLLM range names, CUDA sync events on),
laid out as vLLM's torch profiler writes them: one `*.pt.trace.json.gz` per rank in a folder."""
from __future__ import annotations

import json
import re
import shutil
from html import unescape

import httpx
import pytest

from tests.conftest import DATA, H200, drain_jobs
from tests.test_cli import run

ENGINES = H200 / "engines"


def _trace_dir(tmp_path, name: str, capture: str):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(ENGINES / capture, d / "dp0_pp0_tp0_dcp0_ep0_rank0.1764583200123.pt.trace.json.gz")
    (d / "profiler_out_0.txt").write_text("vLLM prints its key_averages table here\n")
    return d


@pytest.mark.one_database  # traces attached on both databases: tests/service/test_ingest_with_traces.py
def test_vllm_user_attaches_engine_traces(live_server, tmp_path):
    url, app = live_server
    log = DATA / "engines" / "vllm_merged.log"
    common = ["--benchmark", "glm-serve", "--gpu", "NVIDIA H200", "--gpu-count", "1",
              "--no-detect", "--server", url]
    # the baseline: shared experts joined before the routed experts
    r = run("ingest", str(DATA / "engines" / "serve.json"), str(log), "--label", "main",
            "--trace", str(_trace_dir(tmp_path, "base", "torch-joined-eager.json.gz")), *common)
    assert r.returncode == 0, r.stderr
    assert "trace set: 1 file(s): dp0_pp0_tp0_dcp0_ep0_rank0" in r.stderr
    base = int(r.stdout.strip().splitlines()[-1])
    drain_jobs(app)  # the server analyzes uploaded traces in a durable job
    run_a = httpx.get(f"{url}/api/v1/runs/{base}").json()
    s = run_a["trace_summary"]
    assert (s["step_source"], s["steps"], s["prefill_steps"]) == ("auto: vllm", 5, 1)
    assert s["ordering"]["verdict"] == "ok" and s["ordering"]["preset"] == "moe-routed"
    assert s["ordering"]["guarded_kernels"] == 40
    assert [t["filename"] for t in run_a["traces"]] == [
        "dp0_pp0_tp0_dcp0_ep0_rank0.1764583200123.pt.trace.json.gz"]

    # the run page: steps told apart, the verdict, and the engine trace's timeline
    html = httpx.get(f"{url}/runs/{base}").text
    assert "5 decode · 1 prefill" in html and "auto: vllm" in html
    assert re.search(r'id="ordering">ordering check \(moe-routed\): <b class="pass">ok</b>', html)
    fig = re.search(r"class=\"chart timeline\" data-figure='([^']+)'", html)
    assert fig, "no timeline on the run page"
    figure = json.loads(unescape(fig.group(1)))
    rows = {y for bar in figure["data"] for y in bar["y"]}
    assert {"GPU0 s7 (main)", "GPU0 s13 (aux)"} <= rows
    names = {c[0] for bar in figure["data"] for c in bar.get("customdata") or []}
    assert {"fused_moe_kernel", "moe_align_block_size_kernel"} <= names

    r = run("baseline", "set", "v1", "--benchmark", "glm-serve", "--server", url, "--run",
            str(base))
    assert r.returncode == 0, r.stderr

    # a PR that stops joining the shared experts before the routed experts
    cand_json = tmp_path / "pr.json"
    obj = json.loads((DATA / "engines" / "serve.json").read_text())
    obj["output_throughput"] = 80.0
    cand_json.write_text(json.dumps(obj))
    r = run("ingest", str(cand_json), str(log), "--label", "pr", "--branch", "late-join",
            "--repository", "acme/engine", "--pr", "7",
            "--trace", str(_trace_dir(tmp_path, "cand", "torch-unjoined-eager.json.gz")), *common)
    assert r.returncode == 0, r.stderr
    cand = int(r.stdout.strip().splitlines()[-1])
    drain_jobs(app)
    cs = httpx.get(f"{url}/api/v1/runs/{cand}").json()["trace_summary"]
    assert cs["ordering"]["verdict"] == "hazard" and cs["ordering"]["unordered"] == 40

    html = httpx.get(f"{url}/compare", params={"benchmark": "glm-serve", "baseline": "v1",
                                                "run_ids": str(cand)}).text
    table = html[html.index('id="trace-steps"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><td>(baseline|candidate)</td><td class=\"num\">(\d+)</td>"
                      r"<td class=\"num\">(\d+)</td><td>([^<]+)</td><td><b class=\"\w+\">(\w+)</b>",
                      table)
    assert rows == [("baseline", "5", "1", "auto: vllm", "ok"),
                    ("candidate", "5", "1", "auto: vllm", "hazard")]
    assert "fused_moe_kernel" in html  # the kernel diff of the two engine traces

    r = run("comment", "--server", url, "--benchmark", "glm-serve", "--baseline", "v1",
            "--run", str(cand), "--repo", "acme/engine", "--pr", "7", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "**Ordering check (routed experts):** ok → hazard (40 guarded launch(es) not ordered" \
        in r.stdout
