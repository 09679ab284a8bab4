"""The `perfwarden` command as a user runs it (subprocesses against a live server)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import DATA, ROOT, h200_records

# PostgreSQL copies find nothing more here: the commands reach the server through its API, whose
# routes and use cases run on both databases in tests/service/; the CLI's own logic knows no
# database.
pytestmark = pytest.mark.one_database

PW = [sys.executable, "-m", "service.cli"]


def run(*args, env=None, timeout=300):
    e = {**os.environ, **(env or {})}
    return subprocess.run(PW + list(args), capture_output=True, text=True, cwd=ROOT, env=e,
                          timeout=timeout)


def test_analyze_json_and_exit_codes(tmp_path):
    r = run("analyze", str(DATA / "kineto_1layer_M4.json.gz"), "--json", "--quiet")
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert out["steps"] == 10 and out["aux_gap_mean_us"] == pytest.approx(57.768)
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    r = run("analyze", str(bad), "--json")
    assert r.returncode == 65 and r.stdout == ""  # bad input
    assert len(r.stderr.strip().splitlines()) == 1 and "malformed JSON" in r.stderr
    r = run("analyze", str(DATA / "nsys_two_streams.sqlite"), "--json", "--quiet")
    assert r.returncode == 0 and json.loads(r.stdout)["steps"] == 0 and "step0" in r.stderr
    r = run("analyze", str(DATA / "nsys_two_streams.sqlite"), "--step-regex", "step", "--quiet")
    assert r.returncode == 0 and "steps: 20" in r.stdout


def test_analyze_diff_table():
    r = run("analyze", str(DATA / "kineto_1layer_M4.json.gz"), "--diff",
            str(DATA / "kineto_1layer_M8.json.gz"), "--quiet")
    assert r.returncode == 0 and "aux_gap_mean_us" in r.stdout and "slower" in r.stdout


def test_collect_decode_cpu_tp2(tmp_path):
    out = tmp_path / "run.json"
    r = run("collect", "decode", "--device", "cpu", "--tp", "2", "--batch-sizes", "1,4",
            "--trials", "3", "--steps", "8", "--warmup", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    assert [x["config"]["batch_size"] for x in recs] == [1, 4]
    for rec in recs:
        assert rec["config"]["tp"] == 2 and rec["config"]["shared_experts"] == "overlap"
        assert len(rec["metrics"]["tok_s"]["samples"]) == 3
        assert all(s > 0 for s in rec["metrics"]["tok_s"]["samples"])
        # 4 GiB over 2 layers x 1 kv head per rank x 64 dims x 4 bytes x 2 (K and V)
        assert rec["metrics"]["kv_capacity_tokens"]["samples"] == [(4 << 30) // 1024]
        assert rec["determinism"] == {**rec["determinism"], "repeats": 3, "identical": 3}
    assert "GPU KV cache size: 4,194,304 tokens" in r.stderr
    assert "trial 3/3" in r.stderr  # progress


def test_collect_decode_cpu_tp8(tmp_path):
    """The production shape's rank count: 8 ranks over gloo on the CPU, heads and experts sharded
    8 ways; every rank decodes the same tokens (the digests agree across repeats)."""
    out = tmp_path / "tp8.json"
    r = run("collect", "decode", "--device", "cpu", "--tp", "8", "--batch-sizes", "1,8",
            "--trials", "2", "--steps", "4", "--warmup", "1", "--shared-experts", "late",
            "--out", str(out))
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    assert [x["config"]["batch_size"] for x in recs] == [1, 8]
    for rec in recs:
        assert rec["config"]["tp"] == 8 and rec["hardware"]["gpu_count"] == 8
        assert len(rec["metrics"]["tok_s"]["samples"]) == 2
        assert all(s > 0 for s in rec["metrics"]["tok_s"]["samples"])
        # 2 kv heads over 8 ranks: each rank keeps one (replicated), 2 layers x 64 dims x 4 B x 2
        assert rec["metrics"]["kv_capacity_tokens"]["samples"] == [(4 << 30) // 1024]
        assert rec["determinism"]["identical"] == 2


def test_collect_refuses_bad_options():
    r = run("collect", "decode", "--batch-sizes", "0,x")
    assert r.returncode == 64 and ("positive" in r.stderr or "integers" in r.stderr)
    r = run("collect", "decode", "--device", "cpu", "--cuda-graphs", "--trials", "1")
    assert r.returncode == 64 and "needs --device cuda" in r.stderr


def test_ingest_and_gate_against_live_server(live_server, tmp_path):
    url, _ = live_server
    r = run("ingest", str(DATA / "engines" / "sweep.jsonl"), "--benchmark", "glm", "--server", url)
    assert r.returncode == 0, r.stderr
    r = run("ingest", str(DATA / "engines" / "serve_zero.json"))
    assert r.returncode == 65 and "no request completed" in r.stderr
    recs = h200_records("noise", "graphs")
    f = tmp_path / "runs.json"
    f.write_text(json.dumps(recs))
    r = run("ingest", str(f), "--server", url)
    assert r.returncode == 0 and "posted 15 run(s) as one batch" in r.stderr
    first_ids = r.stdout.split()
    r = run("ingest", str(f), "--server", url)  # a CI retry: the same ids, nothing stored twice
    assert r.returncode == 0 and r.stdout.split() == first_ids
    import httpx

    runs = httpx.get(f"{url}/api/v1/runs", params={"benchmark": "moe-decode-noise"}).json()["data"]
    by = {}
    for x in runs:
        by.setdefault(x["label"].split("-")[0], []).append(x["id"])
    httpx.post(f"{url}/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                                 "run_ids": sorted(by["aa"])[:4]})
    common = ["gate", "--server", url, "--benchmark", "moe-decode-noise", "--baseline", "v1"]
    r = run(*common, "--run", str(max(by["aa"])))
    assert r.returncode == 0 and "PASS" in r.stdout
    r = run(*common, "--run", str(by["plant3"][0]))
    assert r.returncode == 1 and "FAIL" in r.stdout and "regression" in r.stdout
    r = run("gate", "--server", url, "--benchmark", "glm", "--baseline", "nope", "--run", "1")
    assert r.returncode == 65 and "404" in r.stderr
    r = run("gate", "--server", "http://127.0.0.1:9", "--benchmark", "x", "--baseline", "y", "--run", "1")
    assert r.returncode == 69 and "cannot reach http://127.0.0.1:9" in r.stderr
    one = sorted(by["aa"])[0]
    httpx.post(f"{url}/api/v1/baselines", json={"name": "tiny", "benchmark": "moe-decode-noise",
                                                 "run_ids": [one]})
    r = run("gate", "--server", url, "--benchmark", "moe-decode-noise", "--baseline", "tiny",
            "--run", str(by["plant1"][0]), "--threshold", "tok_s=5")
    # one baseline run: the run-to-run spread comes from the series' history (spec/api.md, Few
    # baseline runs), the
    # 15 default-branch runs but the candidate and the baseline's own run
    assert r.returncode == 0 and "run-to-run spread from the series' history (13 runs)" in r.stdout
    r = run("comment", "--server", url, "--benchmark", "moe-decode-noise", "--baseline", "v1",
            "--run", str(by["plant1"][0]), "--repo", "acme/engine", "--pr", "3", "--dry-run")
    assert r.returncode == 0 and "<!-- perfwarden:moe-decode-noise:v1 -->" in r.stdout


def test_tokens_and_db_commands(tmp_path):
    env = {"PERFWARDEN_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    r = run("db", "upgrade", env=env)
    assert r.returncode == 0 and "(head)" in r.stdout
    r = run("tokens", "create", "--name", "ci", "--scope", "read", env=env)
    assert r.returncode == 0 and r.stdout.startswith("pw_")
    r = run("tokens", "list", env=env)
    assert "ci\tread\tactive" in r.stdout and r.stdout.count("pw_") == 0
    r = run("db", "downgrade", "base", env=env)
    assert r.returncode == 0 and r.stdout.strip() == "base"
    r = run("db", "downgrade", "nonsense", env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_collect_posts_records_and_traces(live_server, tmp_path):
    """collect decode --server posts each run; trace upload streams a real H200 export."""
    url, _ = live_server
    r = run("collect", "decode", "--device", "cpu", "--tp", "1", "--batch-sizes", "2",
            "--trials", "3", "--steps", "4", "--warmup", "1", "--server", url)
    assert r.returncode == 0, r.stderr
    rid = int(r.stdout.strip().splitlines()[-1])
    from collectors.record import post_trace
    from tests.conftest import H200

    res = post_trace(url, rid, H200 / "traces" / "tp1-late-eager-nsys_M1.sqlite.gz")
    assert res["state"] == "pending" and res["format"] == "nsys"
    import time

    import httpx

    end = time.monotonic() + 300  # the server's worker analyzes it, after whatever is busy
    while True:
        got = httpx.get(f"{url}/api/v1/runs/{rid}").json()
        if got["traces"][0]["state"] == "failed" or got["trace_summary"]:
            break
        assert time.monotonic() < end, got["traces"][0]
        time.sleep(0.1)
    assert got["traces"][0]["state"] == "done" and got["trace_summary"]["steps"] == 10, got["traces"][0]
    assert got["config"]["batch_size"] == 2 and got["traces"][0]["id"] == res["id"]


def test_gate_vary_bisect_and_baseline_commands(live_server, tmp_path):
    """The shared-expert PR's question from the command line (H200 A/B data), bisect exit codes, and
    baselines without curl."""
    url, _ = live_server
    import httpx

    ids: dict[str, list[int]] = {}
    for f in sorted((ROOT / "data" / "h200" / "ab").glob("*.json")):
        for rec in json.loads(f.read_text()):
            rid = httpx.post(f"{url}/api/v1/runs", json=rec).json()["id"]
            ids.setdefault(f"{rec['label']}-M{rec['config']['batch_size']}", []).append(rid)
    r = run("baseline", "set", "v17", "--benchmark", "moe-decode-ab", "--server", url,
            *[x for i in ids["v17-overlap-M1"] + ids["v17-overlap-M8"] for x in ("--run", str(i))])
    assert r.returncode == 0 and "created baseline 'v17'" in r.stderr
    r = run("baseline", "list", "--server", url)
    assert r.returncode == 0 and "moe-decode-ab\tv17\truns " in r.stdout
    r = run("baseline", "show", "v17", "--benchmark", "moe-decode-ab", "--server", url)
    assert r.returncode == 0 and len(json.loads(r.stdout)["run_ids"]) == 12
    common = ["gate", "--server", url, "--benchmark", "moe-decode-ab", "--baseline", "v17",
              "--metric", "tok_s"]
    late1 = [x for i in ids["pr-late-M1"] for x in ("--run", str(i))]
    late8 = [x for i in ids["pr-late-M8"] for x in ("--run", str(i))]
    r = run(*common, *late1)
    assert r.returncode == 3 and "no baseline run in this series" in r.stdout
    r = run(*common, *late1, "--vary", "shared_experts")
    assert r.returncode == 1 and "regression" in r.stdout
    assert "shared_experts=overlap→late" in r.stdout  # both sides, never cut
    r = run(*common, *late8, "--vary", "shared_experts", "--bisect")
    assert r.returncode == 0 and "PASS" in r.stdout  # good
    r = run(*common, *late1, "--vary", "shared_experts", "--bisect")
    assert r.returncode == 1  # bad
    r = run(*common, *late1, "--bisect")
    assert r.returncode == 125  # inconclusive: skip
    r = run("gate", "--server", url, "--benchmark", "moe-decode-ab", "--baseline", "v17-overlap",
            *late1, "--bisect")
    assert r.returncode == 128 and "not found" in r.stderr  # our error: git stops the bisect
    # a label is no baseline name: exit 65, unless asked for as label:
    r = run("gate", "--server", url, "--benchmark", "moe-decode-ab", "--baseline", "v17-overlap",
            *late1)
    assert r.returncode == 65 and "404" in r.stderr and "label:v17-overlap" in r.stderr
    r = run("gate", "--server", url, "--benchmark", "moe-decode-ab", "--baseline",
            "label:v17-overlap", *late1, "--vary", "shared_experts")
    assert r.returncode == 1
    r = run("noise", "moe-decode-ab", "--server", url, "--baseline", "v17")
    assert r.returncode == 0 and "baseline v17" in r.stdout and r.stdout.count("   6 ") >= 2
    r = run("baseline", "delete", "v17", "--benchmark", "moe-decode-ab", "--server", url)
    assert r.returncode == 0
    r = run("baseline", "show", "v17", "--benchmark", "moe-decode-ab", "--server", url)
    assert r.returncode == 65 and "404" in r.stderr


def test_noise_without_a_database_says_so(tmp_path):
    env = {"PERFWARDEN_DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"}
    r = run("noise", "moe-decode", env=env)
    assert r.returncode == 2 and "no database at" in r.stderr
    assert not (tmp_path / "none.db").exists()


def test_trace_set_folder_moves_and_ingests_once(live_server, tmp_path):
    """collect writes records and traces into one folder; the folder can be moved; ingesting it
    posts the run as one batch and both rank files as one trace set; a retry stores nothing."""
    import shutil

    import httpx

    url, _ = live_server
    out = tmp_path / "gpu-node" / "run.json"
    r = run("collect", "decode", "--device", "cpu", "--tp", "2", "--batch-sizes", "1",
            "--trials", "2", "--steps", "4", "--warmup", "1", "--profile", "torch", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())[0]
    assert rec["trace_files"] == ["traces/trace_M1_rank0.json.gz", "traces/trace_M1_rank1.json.gz"]
    assert rec["idempotency_key"].startswith("pw1-")  # a collector record: from its content
    moved = tmp_path / "elsewhere"
    shutil.move(str(out.parent), moved)
    r = run("ingest", str(moved / "run.json"), "--server", url)
    assert r.returncode == 0, r.stderr
    rid = int(r.stdout.split()[0])
    assert "uploaded trace trace_M1_rank1.json.gz" in r.stderr
    import time

    for _ in range(600):  # the server's worker analyzes the set (the record's own summary until then)
        got = httpx.get(f"{url}/api/v1/runs/{rid}").json()
        if got["trace_summary"]["source"] == "trace_M1_rank0.json.gz, trace_M1_rank1.json.gz":
            break
        time.sleep(0.1)
    assert sorted(t["filename"] for t in got["traces"]) == ["trace_M1_rank0.json.gz",
                                                            "trace_M1_rank1.json.gz"]
    assert [t["state"] for t in got["traces"]] == ["done", "done"]
    assert got["trace_summary"]["source"] == "trace_M1_rank0.json.gz, trace_M1_rank1.json.gz"
    r = run("ingest", str(moved / "run.json"), "--server", url)
    assert r.returncode == 0 and int(r.stdout.split()[0]) == rid
    again = httpx.get(f"{url}/api/v1/runs/{rid}").json()
    assert len(again["traces"]) == 2  # the same files are stored once
    assert httpx.get(f"{url}/api/v1/runs", params={"benchmark": "moe-decode"}).json()["count"] == 1


def test_ingest_is_all_or_nothing_and_out_dash_is_stdout(live_server, tmp_path):
    import httpx

    url, _ = live_server
    recs = h200_records("noise", "graphs")[:3]
    recs[1]["metrics"]["tok_s"]["samples"] = ["fast"]
    f = tmp_path / "three.json"
    f.write_text(json.dumps(recs))
    r = run("ingest", str(f), "--server", url)
    assert r.returncode == 65 and "record 1" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert httpx.get(f"{url}/api/v1/runs").json()["count"] == 0
    recs[1] = {**recs[1], "comit": "abc"}  # passes the collector's check; the server names it
    recs[1]["metrics"]["tok_s"]["samples"] = [1.0, 2.0, 3.0]
    f.write_text(json.dumps(recs))
    r = run("ingest", str(f), "--server", url)
    assert r.returncode == 65 and "runs.1.comit" in r.stderr
    assert httpx.get(f"{url}/api/v1/runs").json()["count"] == 0
    r = run("ingest", str(DATA / "engines" / "serve.json"), "--benchmark", "glm", "--out", "-",
            "--label", "pr-1")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["label"] == "pr-1"
    assert not (ROOT / "-").exists()
    r = run("ingest", str(DATA / "engines" / "serve.json"), "--out", "-", "--config", "tp=8",
            "--config", "cuda_graphs=true", "--gpu", "NVIDIA H200", "--gpu-count", "8",
            "--commit", "abc1234", "--branch", "main", "--repository", "acme/engine", "--pr", "150")
    rec = json.loads(r.stdout)[0]
    assert rec["config"]["tp"] == 8 and rec["config"]["cuda_graphs"] is True
    assert rec["hardware"] == {"gpu": "NVIDIA H200", "gpu_count": 8}
    assert (rec["commit"], rec["pr"], rec["repository"]) == ("abc1234", 150, "acme/engine")
    assert rec["idempotency_key"].startswith("pw1f-")  # from the file's bytes and the flags
    r = run("ingest", str(DATA / "engines" / "serve.json"), "--config", "tp")
    assert r.returncode == 2 and "expected KEY=VALUE" in r.stderr


def test_serve_refuses_a_database_behind_head(pg_ok):
    """PostgreSQL is migrated apart (`perfwarden db upgrade`): serve says so instead of
    answering 500 everywhere."""
    if not pg_ok:
        pytest.skip("PostgreSQL not available")
    from service import migrate
    from tests.conftest import new_pg_database

    url, drop = new_pg_database()
    try:
        migrate.upgrade(url, "0001")
        r = run("serve", "--port", "1", env={"PERFWARDEN_DATABASE_URL": url}, timeout=60)
        assert r.returncode == 2 and f"at revision 0001, not {migrate.head()}" in r.stderr
        assert "perfwarden db upgrade" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    finally:
        drop()


def test_attribute_command(live_server):
    import httpx

    url, _ = live_server
    recs = json.loads((ROOT / "data" / "h200" / "matrix" / "matrix.json").read_text())
    assert httpx.post(f"{url}/api/v1/runs/batch", json={"runs": recs}, timeout=60).status_code == 201
    r = run("attribute", "moe-decode-matrix", "--metric", "determinism", "--server", url)
    assert r.returncode == 0, r.stderr
    assert "attribution over 24 run(s)" in r.stdout
    assert "non-identical repeats follow batch_size" in r.stdout
    assert r.stdout.split("levels")[1].strip().startswith("batch_size")  # the first row
    r = run("attribute", "moe-decode-matrix", "--server", url, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["spread_finding"].startswith(
        "the tok_s trial spread follows cuda_graphs")
