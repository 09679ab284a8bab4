"""`perfwarden comment`: fetch the comparison from the service, post or edit the PR comment and,
with --check, the check run on the candidate commit; append the table to the job summary."""
from __future__ import annotations

import os
import sys

from collectors.errors import CliError, Refused, Unreachable, UsageError
from collectors.options import thresholds

from ..schemas import CompareOut, ExperimentOut
from .check import post_check
from .github import GitHub, GitHubError
from .markdown import append_step_summary, marker, render


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


def post_comment(args, api) -> int:
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
    body = render(cmp, args.dashboard_url, args.server, query)
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
