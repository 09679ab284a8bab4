"""`perfwarden comment`: fetch the comparison from the service, post or edit the PR comment and,
with --check, the check run on the candidate commit; append the table to the job summary."""
from __future__ import annotations

import os
import sys

from collectors.errors import CliError, Refused, Unreachable, UsageError
from collectors.options import thresholds
from collectors.record import pending_evidence

from ..experiments.schemas import ExperimentOut
from ..explain.schemas import ExplainOut
from ..format import md
from ..gate.schemas import CompareOut
from ..github_rest import GitHub, GitHubError
from .check import error_title, post_check, post_error_check
from .markdown import append_step_summary, marker, render, with_pending


def github_error(e: GitHubError) -> CliError:
    """A GitHub failure as the CLI's error: unreachable or 5xx 69, a repository, PR or commit
    it does not know 65 (bad input), bad credentials or permissions 2."""
    if e.status is None or e.status >= 500:
        return Unreachable(str(e))
    return Refused(str(e), e.status)


def _candidate_sha(args, cmp: CompareOut) -> str:
    sha = getattr(args, "sha", None) or next((r.commit for r in cmp.candidate_runs if r.commit),
                                             None)
    if not sha:
        raise UsageError("comment --check: the candidate runs carry no commit; give --sha SHA")
    return sha


def _judged(args) -> dict[str, str]:
    """--metric and --threshold as the compare view's `metrics` and `thresholds`: the comment
    and the check judge what `gate` judged with the same flags."""
    q = {}
    if getattr(args, "metric", None):
        q["metrics"] = ",".join(args.metric)
    if getattr(args, "threshold", None):
        given = thresholds(args.threshold)  # the one reading of --threshold (CliError if bad)
        q["thresholds"] = ",".join(f"{name}={pct!r}" for name, pct in given.items())
    return q


_MD_SPECIAL = set("\\`*_{}[]()#+-.!|~>")


def _escape(text: str) -> str:
    """Text shown as itself in GitHub Markdown: HTML characters as entities, Markdown's
    punctuation backslash-escaped (a message never opens a link, a table cell or a tag)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join(f"\\{c}" if c in _MD_SPECIAL else c for c in text)


def error_body(benchmark: str, baseline: str, message: str) -> str:
    """The PR comment when the gate could not run: what failed, in the error's own words."""
    lines = [line for line in message.strip().splitlines() if line.strip()] or ["unknown error"]
    return "\n".join([
        marker(benchmark, baseline),
        f"## ❌ perfwarden: **ERROR** — `{benchmark.replace('`', '')}` vs baseline "
        f"`{baseline.replace('`', '')}`", "",
        "The performance gate could not run, so there is no verdict for this commit:", "",
        *[f"> {_escape(line)}" for line in lines[:20]], "",
        "Fix the cause and re-run the job; this comment is replaced by the verdict."]) + "\n"


def post_error(args) -> int:
    """`comment --error MESSAGE`: a failed check titled `ERROR: <first line>` and the PR comment
    saying the gate could not run and why."""
    if not args.benchmark:
        raise UsageError("comment --error: give --benchmark (the check is `perfwarden: BENCHMARK`)")
    if not args.pr and not args.check:
        raise UsageError("comment: give --pr NUMBER (or --check for the commit's check alone)")
    if args.check and not args.sha:
        raise UsageError("comment --error --check: give --sha SHA (the commit to mark)")
    if "/" not in args.repo:
        raise UsageError(f"--repo {args.repo!r}: expected OWNER/NAME")
    baseline = args.baseline or "default"
    body = error_body(args.benchmark, baseline, args.error)
    if args.dry_run:
        print(body)
        return 0
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as f:
            f.write(body.split("\n", 1)[1])
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise CliError("GITHUB_TOKEN is not set")
    try:
        with GitHub(token, os.environ.get("GITHUB_API_URL", "https://api.github.com")) as gh:
            if args.pr:
                comment, created = gh.upsert(args.repo, args.pr, marker(args.benchmark, baseline),
                                             body)
                print(f"{'posted' if created else 'updated'} comment {comment.get('id')} on "
                      f"{args.repo}#{args.pr} (error)", file=sys.stderr)
            if args.check:
                kind, obj, _ = post_error_check(gh, args.repo, args.sha, args.benchmark,
                                                args.error, body.split("\n", 1)[1],
                                                args.dashboard_url)
                print(f"{kind} on {args.repo}@{args.sha[:12]}: {error_title(args.error)}",
                      file=sys.stderr)
    except GitHubError as e:
        raise github_error(e) from None
    return 0


def explain_section(args, api) -> str:  # noqa: ANN001
    """The PR comment's section on the benchmark's factorial matrix (GET /api/v1/explain: the
    key that explains its non-identical repeats and the decision), "" when the benchmark has no
    matrix to explain (the server refuses: too few runs, one cell, no repeats) or the section
    cannot be had: an optional section never keeps the verdict's comment and check from
    posting."""
    try:
        ex = ExplainOut.model_validate(api(args.server, "GET", "/api/v1/explain",
                                           params={"benchmark": args.benchmark}))
    except (CliError, ValueError):  # refused, unreachable or 5xx, an answer of another shape
        return ""
    if ex.key is None:
        return ""
    base = (args.dashboard_url or args.server or "").rstrip("/")
    from urllib.parse import quote

    link = f" ([the matrix]({base}/benchmarks/{quote(ex.benchmark, safe='')}/matrix))" \
        if base else ""
    return (f"### What explains the {md(ex.benchmark, code=True)} matrix\n\n"
            f"{md(ex.decision)}{link}\n\n"
            f"<sub>`perfwarden explain` over {ex.runs} runs on {md(ex.gpu)}; p Holm-corrected "
            "across the config keys.</sub>\n")


def _with_explain(body: str, args, api) -> str:  # noqa: ANN001
    """The comment with the matrix's section after it (a comparison's comment, not an
    experiment's: an experiment's arms are no matrix)."""
    section = "" if getattr(args, "experiment", None) else explain_section(args, api)
    return body.rstrip("\n") + "\n\n" + section if section else body


def post_comment(args, api) -> int:
    if getattr(args, "error", None) is not None:
        return post_error(args)
    query = _judged(args)
    if getattr(args, "experiment", None):
        exp = ExperimentOut.model_validate(api(args.server, "GET",
                                               f"/api/v1/experiments/{args.experiment}"))
        cmp = CompareOut(**exp.verdict.model_dump(), distributions=[], trace_diff=None, traces={},
                         baseline_runs=[], candidate_runs=[])
        args.benchmark, args.baseline = exp.benchmark, exp.verdict.baseline
    else:
        if not args.benchmark or not args.baseline or not args.run:
            raise UsageError("comment: give --benchmark, --baseline and --run (or --experiment ID)")
        params = {"benchmark": args.benchmark, "baseline": args.baseline,
                  "run_ids": ",".join(map(str, args.run))}
        if getattr(args, "vary", None):
            params["vary"] = ",".join(args.vary)
        params.update(query)
        cmp = CompareOut.model_validate(api(args.server, "GET", "/api/v1/compare", params=params))
    check = getattr(args, "check", False)
    pr = getattr(args, "pr", None)
    if not pr and not check:
        raise UsageError("comment: give --pr NUMBER (or --check for the commit's check alone)")
    body = _with_explain(render(cmp, args.dashboard_url, args.server, query), args, api)
    waiting = None if getattr(args, "experiment", None) else \
        pending_evidence(args.server, cmp.candidate_run_ids, api)
    body = with_pending(body, waiting, "re-run `perfwarden comment` to add it")
    if args.dry_run:
        print(body)
        return 0
    append_step_summary(cmp, os.environ.get("GITHUB_STEP_SUMMARY"))
    if "/" not in args.repo:
        raise UsageError(f"--repo {args.repo!r}: expected OWNER/NAME")
    sha = _candidate_sha(args, cmp) if check else ""
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise CliError("GITHUB_TOKEN is not set")
    api_url = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    try:
        with GitHub(token, api_url) as gh:
            if pr:
                comment, created = gh.upsert(args.repo, pr, marker(args.benchmark, args.baseline),
                                             body)
                print(f"{'posted' if created else 'updated'} comment {comment.get('id')} on "
                      f"{args.repo}#{pr} (verdict: {cmp.verdict})", file=sys.stderr)
            if check:
                kind, obj, created = post_check(gh, args.repo, sha, cmp, args.dashboard_url,
                                                  query)
                what = (f"check run {obj.get('id')} ({obj.get('conclusion')})" if kind == "check"
                        else f"commit status ({obj.get('state')}; the token may not write checks)")
                print(f"{'created' if created else 'updated'} {what} on {args.repo}@{sha[:12]}",
                      file=sys.stderr)
    except GitHubError as e:
        raise github_error(e) from None
    return 0
