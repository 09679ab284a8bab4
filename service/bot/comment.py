"""`perfwarden comment`: fetch the comparison from the service, post or edit the PR comment."""
from __future__ import annotations

import os
import sys

from collectors.errors import CliError

from ..schemas import CompareOut, ExperimentOut
from .github import GitHub, GitHubError
from .markdown import marker, render


def post_comment(args, api) -> int:
    if getattr(args, "experiment", None):
        exp = ExperimentOut.model_validate(api(args.server, "GET",
                                               f"/api/v1/experiments/{args.experiment}"))
        cmp = CompareOut(**exp.verdict.model_dump(), distributions=[], trace_diff=None, traces={},
                         baseline_runs=[], candidate_runs=[])
        args.benchmark, args.baseline = exp.benchmark, exp.verdict.baseline
    else:
        if not args.benchmark or not args.baseline or not args.run:
            raise CliError("comment: give --benchmark, --baseline and --run (or --experiment ID)")
        params = {"benchmark": args.benchmark, "baseline": args.baseline,
                  "run_ids": ",".join(map(str, args.run))}
        if getattr(args, "vary", None):
            params["vary"] = ",".join(args.vary)
        cmp = CompareOut.model_validate(api(args.server, "GET", "/api/v1/compare", params=params))
    body = render(cmp, args.dashboard_url, args.server)
    if args.dry_run:
        print(body)
        return 0
    if "/" not in args.repo:
        raise CliError(f"--repo {args.repo!r}: expected OWNER/NAME")
    token = os.environ.get("GITHUB_TOKEN", "")
    api_url = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    try:
        with GitHub(token, api_url) as gh:
            comment, created = gh.upsert(args.repo, args.pr, marker(args.benchmark, args.baseline),
                                         body)
    except GitHubError as e:
        raise CliError(str(e)) from None
    print(f"{'posted' if created else 'updated'} comment {comment.get('id')} on {args.repo}#"
          f"{args.pr} (verdict: {cmp.verdict})", file=sys.stderr)
    return 0
