"""`perfwarden bisect` (spec/api.md, bisect): the first commit between a good and a bad one
whose runs regress against the good commit's runs.

At the good commit CMD runs N times: those runs are the reference. `git bisect run` then calls
`perfwarden bisect --step` at every commit it checks out, which runs CMD N times and judges the
step's runs against the reference through the server's gate, answering git 0 (good), 1 (bad),
125 (skip: the commit cannot be judged) or 128 (an error of ours: git stops the bisect rather
than blame a commit). CMD posts runs of the checked-out commit (`collect ... --server`); the
environment tells it the bisect's id and commit, so every run it posts is tagged
`bisect {id, commit}` and never enters a history. The repository is always restored.

The server is reached through `api(method, path, **kw) -> dict` (the CLI's HTTP helper), so
this module holds the workflow and nothing of HTTP.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collectors.env import BISECT_COMMIT_ENV, BISECT_ENV

Api = Callable[..., dict]
GOOD, BAD, SKIP, ABORT = 0, 1, 125, 128  # `git bisect run` exit codes
FOUND, UNDECIDED = 0, 3  # `perfwarden bisect` exit codes (2: an error)
FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.M)
ONLY_SKIPPED = "only 'skip'ped commits left"


class BisectError(Exception):
    """Why the bisect cannot go on: one line."""


@dataclass
class Plan:
    bisect_id: str
    benchmark: str
    api: Api  # the server, through the CLI's HTTP helper
    cmd: list[str]
    runs: int = 3
    metrics: list[str] | None = None
    thresholds: dict[str, float] | None = None
    reference: list[int] = field(default_factory=list)  # the good commit's runs


@dataclass
class Outcome:
    exit_code: int
    first_bad: str | None = None
    subject: str = ""
    gate: dict[str, Any] | None = None
    candidates: list[str] = field(default_factory=list)  # undecided: the first bad is one of
    message: str = ""


def git(*args: str, check: bool = True) -> str:
    r = subprocess.run(["git", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        err = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise BisectError(f"git {' '.join(args)}: {err}")
    return r.stdout.strip()


def in_progress() -> bool:
    path = git("rev-parse", "--git-path", "BISECT_START")
    return os.path.exists(path)


def resolve(ref: str) -> str:
    return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


def _environment(plan: Plan, sha: str) -> dict[str, str]:
    return {**os.environ, BISECT_ENV: plan.bisect_id, BISECT_COMMIT_ENV: sha}


def collect(plan: Plan, sha: str) -> list[int]:
    """CMD N times at the checked-out commit `sha`; returns the runs it posted there."""
    shell = len(plan.cmd) == 1
    for i in range(plan.runs):
        print(f"bisect {plan.bisect_id}: {sha[:12]} run {i + 1}/{plan.runs}: "
              f"{shlex.join(plan.cmd)}", file=sys.stderr, flush=True)
        r = subprocess.run(plan.cmd[0] if shell else plan.cmd, shell=shell,
                           env=_environment(plan, sha), stdout=sys.stderr)
        if r.returncode != 0:
            raise BisectError(f"CMD exited {r.returncode} at {sha[:12]}")
    return step_runs(plan, sha)


def step_runs(plan: Plan, sha: str) -> list[int]:
    page = plan.api("GET", "/api/v1/runs", params={
        "benchmark": plan.benchmark, "bisect": plan.bisect_id, "commit": sha, "limit": 1000})
    return sorted(r["id"] for r in page["data"])


def judge(plan: Plan, run_ids: list[int]) -> dict[str, Any]:
    body: dict[str, Any] = {"benchmark": plan.benchmark,
                            "baseline": "runs:" + ",".join(map(str, plan.reference)),
                            "run_ids": run_ids}
    if plan.metrics:
        body["metrics"] = plan.metrics
    if plan.thresholds:
        body["thresholds"] = plan.thresholds
    return plan.api("POST", "/api/v1/gate", json=body)


def step_code(verdict: str) -> int:
    """`gate --bisect`'s mapping: pass (improvements pass) is good, fail is bad, else skip."""
    return {"pass": GOOD, "fail": BAD}.get(verdict, SKIP)


def step(plan: Plan, show: Callable[[dict], None]) -> int:
    """One commit of `git bisect run`: CMD N times, judged against the reference."""
    sha = git("rev-parse", "HEAD")
    try:
        ids = collect(plan, sha)
    except BisectError as e:  # the commit does not build or run: no evidence either way
        print(f"bisect: {e}: skipping {sha[:12]}", file=sys.stderr)
        return SKIP
    if not ids:
        print(f"bisect: CMD posted no run of {plan.benchmark} at {sha[:12]}: skipping",
              file=sys.stderr)
        return SKIP
    result = judge(plan, ids)
    show(result)
    code = step_code(result["verdict"])
    print(f"bisect: {sha[:12]} is {({GOOD: 'good', BAD: 'bad'}).get(code, 'skipped')} "
          f"({result['verdict']})", file=sys.stderr, flush=True)
    return code


def bisect(plan: Plan, good: str, bad: str, step_argv: list[str]) -> Outcome:
    """The whole bisect; `step_argv` is the command `git bisect run` calls at each commit
    (this plan's `perfwarden bisect --step ...`, without the reference run ids)."""
    git("rev-parse", "--show-toplevel")
    if in_progress():
        raise BisectError("a git bisect is already in progress here (`git bisect reset` ends it)")
    if git("status", "--porcelain", "--untracked-files=no"):
        raise BisectError("the working tree has uncommitted changes: commit or stash them first")
    good_sha, bad_sha = resolve(good), resolve(bad)
    if good_sha == bad_sha:
        raise BisectError(f"--good and --bad are the same commit ({good_sha[:12]})")
    started = subprocess.run(["git", "bisect", "start", bad_sha, good_sha], capture_output=True,
                             text=True)
    try:
        if started.returncode != 0:
            err = (started.stderr.strip().splitlines() or ["failed"])[-1]
            raise BisectError(f"git bisect start: {err}")
        first = git("rev-parse", "HEAD")
        git("checkout", "-q", good_sha)
        print(f"bisect {plan.bisect_id}: reference runs at the good commit {good_sha[:12]}",
              file=sys.stderr, flush=True)
        plan.reference = collect(plan, good_sha)
        if not plan.reference:
            raise BisectError(f"CMD posted no run of {plan.benchmark} at the good commit "
                              f"{good_sha[:12]}: it must post to the server (--server URL)")
        git("checkout", "-q", first)
        found = FIRST_BAD.search(started.stdout)  # one commit in the range: nothing to run
        text = started.stdout
        if not found:
            text = _run(step_argv + ["--reference", ",".join(map(str, plan.reference)),
                                     "--", *plan.cmd])
            found = FIRST_BAD.search(text)
        if not found:
            if ONLY_SKIPPED in text:
                cands = re.findall(r"^([0-9a-f]{40})\b", text.split(ONLY_SKIPPED, 1)[1], re.M)
                return Outcome(UNDECIDED, candidates=cands,
                               message="skipped commits left it undecided")
            tail = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or ["no answer"]
            raise BisectError(f"git bisect run: {tail[0]}")
        sha = found.group(1)
        ids = step_runs(plan, sha)
        if not ids:  # the --bad commit itself: never run by `git bisect run`
            git("checkout", "-q", sha)
            ids = collect(plan, sha)
        result = judge(plan, ids) if ids else None
        return Outcome(FOUND, sha, git("log", "-1", "--format=%s", sha), result)
    finally:
        subprocess.run(["git", "bisect", "reset"], capture_output=True)


def _run(argv: list[str]) -> str:
    """`git bisect run ARGV`, its output shown as it comes and returned."""
    proc = subprocess.Popen(["git", "bisect", "run", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        sys.stderr.write(line)
        sys.stderr.flush()
    proc.wait()
    return "".join(lines)
