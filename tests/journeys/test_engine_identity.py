"""A performance engineer ingests the engine files of many servers as their jobs left them, with
no flag: `vllm bench` results with and without logs, SGLang `bench_serving` lines that name no
model, tp or GPU, partial and hard-wrapped server logs, one model under two cache folders. What
a run does not know of its server is in its series and said by the gate, the pages and the
comment; the gate refuses where only unknown identity sets the sides apart, and `--config` at
ingest settles it; a wrong log, and a file that is no trace, are refused in one line."""
from __future__ import annotations

import shutil
import subprocess

from tests.conftest import DATA

from .shell import PERFWARDEN, run

ENGINES = DATA / "engines"
SERVERS = ENGINES / "servers"
CRAFTED = ENGINES / "identity"
GITHUB = ("GITHUB_SHA", "GITHUB_REF_NAME")


def job(tmp_path, name: str, *files) -> list:
    """A CI job's artifact folder: the files copied in, outside any git repository."""
    d = tmp_path / name
    d.mkdir()
    for f in files:
        shutil.copy(f, d / f.name)
    return [d / f.name for f in files]


def ingest(served, *files, cwd, extra=()) -> tuple[list[int], list[str]]:
    r = run([PERFWARDEN, "ingest", *map(str, files), *extra, "--server", served.url], cwd=cwd)
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()], r.stderr.splitlines()


def gate(served, benchmark, baseline, run_id, *extra, cwd):
    return run([PERFWARDEN, "gate", "--server", served.url, "--benchmark", benchmark,
                "--baseline", baseline, "--run", str(run_id), *extra], cwd=cwd)


def baseline(served, benchmark, name, *ids, cwd):
    r = run([PERFWARDEN, "baseline", "set", name, "--benchmark", benchmark, "--server",
             served.url, *[x for i in ids for x in ("--run", str(i))]], cwd=cwd)
    assert r.returncode == 0, r.stderr


def test_servers_of_unknown_identity_are_never_pooled_silently(served, tmp_path):
    cwd = tmp_path  # the user's folder: no git repository, no CI variables, no nvidia-smi
    runs_by = {}

    # two SGLang servers (a 70B and a 405B model) measured with one bench_serving command:
    # neither line names its model, tp or GPU
    (a,) = job(tmp_path, "sglang70b", ENGINES / "sglang_bench_serving.jsonl")
    (b,) = job(tmp_path, "sglang405b", CRAFTED / "sglang_405b_tp8.jsonl")
    (ra,), err = ingest(served, a, cwd=cwd)
    assert any("model, tp, gpu, gpu_count unknown" in w and w.endswith(
        "(give --config model=... --config tp=... --gpu --gpu-count)") for w in err), err
    (rb,), _ = ingest(served, b, cwd=cwd)
    runs = {r["id"]: r for r in served.runs()}
    assert runs[ra]["config"]["unknown"] == "model,tp,gpu,gpu_count"
    assert runs[ra]["series_id"] == runs[rb]["series_id"]  # nothing tells them apart ...
    baseline(served, "sglang-serve", "nightly-70b", ra, cwd=cwd)
    r = gate(served, "sglang-serve", "nightly-70b", rb, cwd=cwd)
    verdict = r.stdout.splitlines()[0]  # ... so the verdict line says what is unknown
    assert verdict.startswith("verdict: ") and (
        "model unknown, tp unknown, gpu unknown, gpu_count unknown: the runs compared may be of "
        "different servers (give --config model=... --config tp=... --gpu --gpu-count at "
        "ingest or --vary model --vary tp)") in verdict, r.stdout
    assert "model unknown tp unknown gpu unknown gpu_count unknown" in r.stdout  # the series
    comment = run([PERFWARDEN, "comment", "--server", served.url, "--benchmark", "sglang-serve",
                   "--baseline", "nightly-70b", "--run", str(rb), "--repo", "acme/engine",
                   "--pr", "7", "--dry-run"], cwd=cwd)
    headline = next(line for line in comment.stdout.splitlines() if line.startswith("## "))
    assert "model unknown, tp unknown" in headline, comment.stdout
    page = served_page(served, "/benchmarks/sglang-serve")
    assert "model unknown" in page
    compare = served_page(served, f"/compare?benchmark=sglang-serve&baseline=nightly-70b&run_ids={rb}")
    assert "model unknown, tp unknown, gpu unknown, gpu_count unknown: the runs compared may be " \
        "of different servers" in compare

    # the same 70B server's line given with its log: model and tp known, its own series; the
    # gate will not judge it against the runs that do not know them, and says how to settle it
    log_a, res_a = job(tmp_path, "sglang-qwen3", SERVERS / "sglang_tp2_qwen3.log",
                       SERVERS / "sglang_tp2_qwen3_c8.jsonl")
    (known,), _ = ingest(served, log_a, res_a, cwd=cwd)
    (bare,), _ = ingest(served, res_a, cwd=cwd)
    runs = {r["id"]: r for r in served.runs()}
    assert runs[known]["config"]["model"] == "Qwen3ForCausalLM"
    assert runs[known]["config"]["unknown"] == "gpu"  # tp=2 gives the GPU count, not the model
    assert runs[known]["series_id"] != runs[bare]["series_id"]
    baseline(served, "sglang-serve", "known", known, cwd=cwd)
    r = gate(served, "sglang-serve", "known", bare, cwd=cwd)
    assert r.returncode == 65, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert ("model unknown, tp unknown, gpu_count unknown, dtype unknown in the candidate's "
            "series (candidate run ") in line, line
    assert line.endswith("give --config model=... --config tp=... --gpu-count --config "
                         "dtype=... at ingest or --vary model --vary tp --vary dtype"), line
    # --config at ingest settles it: the same bytes, now one series with the log's run
    (settled,), _ = ingest(served, res_a, cwd=cwd, extra=(
        "--config", "model=Qwen3ForCausalLM", "--config", "tp=2", "--config", "dtype=bfloat16"))
    runs = {r["id"]: r for r in served.runs()}
    assert runs[settled]["series_id"] == runs[known]["series_id"]
    r = gate(served, "sglang-serve", "known", settled, cwd=cwd)
    assert r.returncode in (0, 1, 3), r.stderr
    assert "gpu unknown: the runs compared may be of different servers (give --gpu at ingest)" \
        in r.stdout.splitlines()[0]

    # one Llama-3-8B under two ModelScope cache folders, two nights: one model, one series
    n1, n2 = job(tmp_path, "nights", CRAFTED / "vllm_llama3_8b_night1.json",
                 CRAFTED / "vllm_llama3_8b_night2.json")
    (r1,), _ = ingest(served, n1, cwd=cwd)
    (r2,), _ = ingest(served, n2, cwd=cwd)
    runs = {r["id"]: r for r in served.runs()}
    assert runs[r1]["benchmark"] == runs[r2]["benchmark"] == "vllm-serve-Meta-Llama-3-8B-Instruct"
    assert runs[r1]["series_id"] == runs[r2]["series_id"]
    assert runs[r1]["config"]["model"] == "Meta-Llama-3-8B-Instruct"
    shown = served.get(f"/api/v1/runs/{r2}")
    assert shown["meta"]["model_path"] == "/root/.cache/modelscope/hub/LLM-Research/" \
                                          "Meta-Llama-3-8B-Instruct"
    baseline(served, "vllm-serve-Meta-Llama-3-8B-Instruct", "night1", r1, cwd=cwd)
    r = gate(served, "vllm-serve-Meta-Llama-3-8B-Instruct", "night1", r2, cwd=cwd)
    assert r.returncode in (0, 1, 3), r.stderr  # judged, not refused
    # a renamed copy of the same bytes is the same run
    renamed = n2.with_name("results-2026-12-02.json")
    shutil.copy(n2, renamed)
    assert ingest(served, renamed, cwd=cwd)[0] == [r2]
    runs_by["nights"] = (r1, r2)

    # logs read whole: a hard-wrapped engine config with an EAGLE3 draft, a partial log
    (wrapped,) = job(tmp_path, "wrapped", CRAFTED / "vllm_eagle3_wrapped.log")
    (partial,) = job(tmp_path, "partial", CRAFTED / "vllm_partial_tp2.log")
    (sgl_draft,) = job(tmp_path, "sgl-draft", CRAFTED / "sglang_eagle3_partial.log")
    (w,), _ = ingest(served, wrapped, cwd=cwd)
    (p,), _ = ingest(served, partial, cwd=cwd)
    (s,), _ = ingest(served, sgl_draft, cwd=cwd)
    runs = {r["id"]: r for r in served.runs()}
    assert {k: runs[w]["config"][k] for k in ("model", "tp", "speculative")} == {
        "model": "meta-llama/Llama-3.1-8B-Instruct", "tp": 1,
        "speculative": "eagle3:3@yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    assert (runs[p]["config"]["model"], runs[p]["config"]["tp"]) == ("Qwen2.5-7B-Instruct", 2)
    assert runs[s]["config"]["model"] == "LlamaForCausalLM"  # never the draft's class
    assert runs[s]["config"]["speculative"] == "draft@LlamaForCausalLMEagle3"

    # a log of another server beside a result: refused in one line, nothing stored
    before = len(served.runs())
    opt, gptoss = job(tmp_path, "mixed", CRAFTED / "vllm_opt125m.json",
                      SERVERS / "vllm_gptoss120b_tp4.log")
    r = run([PERFWARDEN, "ingest", str(opt), str(gptoss), "--server", served.url], cwd=cwd)
    assert r.returncode == 65
    assert r.stderr.strip() == (f"error: {gptoss}: the log's model=openai/gpt-oss-120b is not the "
                                "result's model=facebook/opt-125m: another server's log? Give "
                                "--config model=... to say which is right")
    assert len(served.runs()) == before

    # a file that is no trace: refused before anything is posted
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text('{"run": "nightly", "files": ["vllm_opt125m.json"], "traceEvents": []}')
    r = run([PERFWARDEN, "ingest", str(opt), "--trace", str(manifest), "--server", served.url],
            cwd=cwd)
    assert r.returncode == 65 and "no trace events" in r.stderr.strip().splitlines()[-1]
    assert len(served.runs()) == before
    r = run([PERFWARDEN, "analyze", str(manifest)], cwd=cwd)
    assert r.returncode == 65 and "no trace events" in r.stderr.strip().splitlines()[-1]


def test_failed_requests_are_a_regression_and_the_commit_is_the_files_repository(
        served, tmp_path):
    """The nightly's results live in the engine's checkout (its commit is the run's), ingested
    from another checkout; a night whose server failed 6 of 200 requests is a regression."""
    engine, other = tmp_path / "engine", tmp_path / "other"
    for repo in (engine, other):
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    files = [SERVERS / "vllm_qwen7b_tp2.log", SERVERS / "vllm_qwen7b_r1.json",
             SERVERS / "vllm_qwen7b_r2.json", CRAFTED / "vllm_qwen7b_r3_failed.json"]
    for f in files:
        shutil.copy(f, engine / f.name)
    subprocess.run(["git", "-C", str(engine), "add", "."], check=True)
    subprocess.run(["git", "-C", str(engine), "-c", "user.name=ci", "-c", "user.email=ci@x",
                    "commit", "-qm", "nightly"], check=True)
    (other / "README").write_text("another project")
    subprocess.run(["git", "-C", str(other), "add", "."], check=True)
    subprocess.run(["git", "-C", str(other), "-c", "user.name=ci", "-c", "user.email=ci@x",
                    "commit", "-qm", "other"], check=True)
    head = subprocess.run(["git", "-C", str(engine), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    log = engine / "vllm_qwen7b_tp2.log"
    ids = [ingest(served, log, engine / f.name, cwd=other)[0][0] for f in files[1:]]
    runs = {r["id"]: r for r in served.runs()}
    assert {runs[i]["commit"] for i in ids} == {head}
    assert len({runs[i]["series_id"] for i in ids}) == 1
    shown = served.get(f"/api/v1/runs/{ids[2]}")["metrics"]
    assert shown["failed_requests"]["mean"] == 6 and shown["completed_requests"]["mean"] == 194
    bench = runs[ids[0]]["benchmark"]
    baseline(served, bench, "good-nights", ids[0], ids[1], cwd=other)
    r = gate(served, bench, "good-nights", ids[2], cwd=other)
    assert r.returncode == 1, r.stdout + r.stderr
    row = next(line for line in r.stdout.splitlines() if line.strip().startswith("failed_requests"))
    assert row.rstrip().endswith("regression"), r.stdout
    completed = next(line for line in r.stdout.splitlines()
                     if line.strip().startswith("completed_requests"))
    assert "completed_requests (evidence)" in completed  # explains, never decides


def served_page(served, path: str) -> str:
    import urllib.request

    with urllib.request.urlopen(served.url + path, timeout=30) as r:
        return r.read().decode()
