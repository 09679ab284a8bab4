"""examples/github-actions/perfwarden.yml: valid YAML of the shape GitHub Actions reads, and its
shell steps, run in order as the runner runs them (bash -eo pipefail, the workflow's env with its
expressions resolved), against a live server with the CPU collector and the GitHub stand-in."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.github_standin import TOKEN, FakeGitHub

WORKFLOW = ROOT / "examples" / "github-actions" / "perfwarden.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# tiny CPU sizes; the gate judges the deterministic KV-cache capacity, since CPU timings on a
# shared test machine are far too noisy to plant a change in tok/s
CPU = "--device cpu --batch-sizes 1 --trials 3 --steps 8 --warmup 2"
GATE = "--metric kv_capacity_tokens"


def load() -> dict:
    wf = yaml.safe_load(WORKFLOW.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads a bare `on` as true
    return wf


def resolve(expr: str, ctx: dict) -> str:
    """The expressions the workflow uses: context paths, 'literals' and `a || b`."""
    for alt in (a.strip() for a in expr.split("||")):
        if alt.startswith("'") and alt.endswith("'"):
            return alt[1:-1]
        if not re.fullmatch(r"[A-Za-z_][\w.-]*", alt):
            raise AssertionError(f"expression this runner cannot evaluate: {expr!r}")
        v: object = ctx
        for part in alt.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if v not in (None, ""):
            return str(v)
    return ""


def env_of(block: dict | None, ctx: dict) -> dict[str, str]:
    return {k: EXPR.sub(lambda m: resolve(m.group(1), ctx), str(v))
            for k, v in (block or {}).items()}


def test_workflow_is_valid_actions_yaml():
    wf = load()
    assert wf["name"] == "perfwarden"
    assert set(wf["on"]) == {"pull_request", "push"}
    assert wf["permissions"]["checks"] == "write" and wf["permissions"]["statuses"] == "write"
    assert wf["permissions"]["pull-requests"] == "write"
    (job,) = wf["jobs"].values()
    assert "self-hosted" in job["runs-on"] and "gpu" in job["runs-on"]
    names = [s.get("name", s.get("uses")) for s in job["steps"]]
    assert names == ["actions/checkout@v4", "Install perfwarden", "Collect", "Ingest with identity",
                     "Gate", "Comment and check", "Verdict"]
    for step in job["steps"]:
        assert set(step) <= {"name", "uses", "run", "env", "with", "id"}, step  # no `if:`
        assert ("run" in step) != ("uses" in step)
        assert "${{" not in step.get("run", ""), "expressions belong in env:, not in run:"
    text = WORKFLOW.read_text()
    assert "comment " in text and "--check" in text and "collect command" in text
    assert "--repository" in text and "--commit" in text and "--pr" in text  # ingest identity


def run_steps(wf: dict, ctx: dict, base_env: dict[str, str], tmp: Path) -> list[tuple[str, int, str]]:
    (job,) = wf["jobs"].values()
    env = {**base_env, **env_of(wf.get("env"), ctx), **env_of(job.get("env"), ctx)}
    done = []
    for step in job["steps"]:
        if "run" not in step:
            continue  # actions/checkout: the test's working tree is the checkout
        script = tmp / "step.sh"
        script.write_text(step["run"])
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           env={**env, **env_of(step.get("env"), ctx)}, cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        done.append((step["name"], r.returncode, r.stdout + r.stderr))
        if r.returncode != 0:
            break  # the runner stops at a failed step
    return done


@pytest.fixture
def github():
    f = FakeGitHub()
    yield f
    f.close()


def test_workflow_steps_run_green_then_red_on_a_regression(live_server, github, tmp_path):
    url, _ = live_server
    venv_bin = str(Path(sys.executable).parent)
    base_env = {"PATH": f"{venv_bin}:{os.environ['PATH']}", "HOME": str(tmp_path),
                "RUNNER_TEMP": str(tmp_path / "runner"), "GITHUB_API_URL": github.url,
                "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
                "PYTHONPATH": str(ROOT)}
    (tmp_path / "runner").mkdir()
    # the baseline: three runs of main, collected and stored as a user would
    pw = [sys.executable, "-m", "service.cli"]
    main = tmp_path / "main.json"
    r = subprocess.run(pw + ["collect", "decode", *CPU.replace("--batch-sizes 1", "--batch-sizes 1,1,1")
                             .split(), "--quiet", "--out", str(main)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(pw + ["ingest", str(main), "--branch", "main", "--commit", "a" * 40,
                             "--server", url], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    ids = r.stdout.split()
    assert len(ids) == 3
    r = subprocess.run(pw + ["baseline", "set", "main", "--benchmark", "moe-decode", "--server",
                             url, *[x for i in ids for x in ("--run", i)]],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr

    wf = load()
    sha = "b" * 40
    ctx = {"vars": {"PERFWARDEN_SERVER": url, "PERFWARDEN_DASHBOARD_URL": "http://dash.local"},
           "secrets": {"PERFWARDEN_TOKEN": "", "GITHUB_TOKEN": TOKEN},
           "github": {"repository": "acme/engine", "sha": "f" * 40, "ref": "refs/pull/7/merge",
                      "ref_name": "7/merge", "head_ref": "fix/moe-order",
                      "event": {"pull_request": {"number": 7, "head": {"sha": sha}}}}}
    wf["env"].update(COLLECT_ARGS=CPU, GATE_ARGS=GATE)
    steps = run_steps(wf, ctx, base_env, tmp_path)
    assert [(n, c) for n, c, _ in steps] == [(n, 0) for n, _, _ in steps], steps
    assert [n for n, _, _ in steps][-1] == "Verdict" and "perfwarden: pass" in steps[-1][2]
    (check,) = github.check_runs.values()
    assert check["head_sha"] == sha and check["conclusion"] == "success"
    assert check["name"] == "perfwarden: moe-decode"
    assert check["details_url"].startswith("http://dash.local/compare?benchmark=moe-decode")
    assert "metrics=kv_capacity_tokens" in check["details_url"]
    (comment,) = github.comments.values()
    assert "**PASS**" in comment["body"]
    summary = (tmp_path / "summary.md").read_text()
    assert summary.count("### ") == 2  # gate and comment each append the table
    assert "| `kv_capacity_tokens` |" in summary
    run = subprocess.run(pw + ["gate", "--server", url, "--benchmark", "moe-decode", "--baseline",
                               "main", "--commit", sha, "--json", *GATE.split()],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr  # the PR's run was stored with its identity

    # a push to the PR that halves the KV cache: the job goes red at the Verdict step, after
    # the comment and a new check on the new head say why
    sha2 = "c" * 40
    ctx["github"]["event"]["pull_request"]["head"]["sha"] = sha2
    wf["env"]["COLLECT_ARGS"] = CPU + " --kv-cache-gib 2"
    steps = run_steps(wf, ctx, base_env, tmp_path)
    assert [(n, c) for n, c, _ in steps][-1] == ("Verdict", 1), steps
    assert all(c == 0 for _, c, _ in steps[:-1]), steps
    assert "::error::perfwarden: regression" in steps[-1][2]
    new = [c for c in github.check_runs.values() if c["head_sha"] == sha2]
    assert len(new) == 1 and new[0]["conclusion"] == "failure"
    assert len(github.comments) == 1 and "**FAIL**" in next(iter(github.comments.values()))["body"]
    assert not any(TOKEN in out for _, _, out in steps)
    assert not any(TOKEN in b for b in github.bodies)
