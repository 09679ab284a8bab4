"""The check run `perfwarden: BENCHMARK` on the candidate commit (spec/api.md, GitHub checks):
created
once, edited in place on every later report, so a repository can require it before merging.
Where the token may not write checks (GitHub answers 403), a commit status of the same name."""
from __future__ import annotations

from collectors.verdicts import FAIL, INCONCLUSIVE, PASS, REGRESSION

from ..gate.schemas import CompareOut
from ..github_rest import GitHub, GitHubError
from .markdown import compare_url, headline, kernel_table, reasons, verdict_table

CONCLUSION = {PASS: "success", FAIL: "failure", INCONCLUSIVE: "neutral"}
# a commit status has no "neutral": an inconclusive verdict does not block, as a neutral check
# does not, and its description says so
STATE = {PASS: "success", FAIL: "failure", INCONCLUSIVE: "success"}


def check_name(benchmark: str) -> str:
    return f"perfwarden: {benchmark}"


def title(cmp: CompareOut) -> str:
    bad = sum(m.verdict == REGRESSION for m in cmp.metrics)
    unsure = sum(m.verdict == INCONCLUSIVE for m in cmp.metrics)
    n = len(cmp.metrics)
    tail = f"{bad} of {n} metric verdicts regressed" if bad else (
        f"{unsure} of {n} metric verdicts inconclusive" if unsure else
        "the metric verdict passes" if n == 1 else f"all {n} metric verdicts pass")
    return f"{cmp.verdict.upper()} vs baseline {cmp.baseline}: {tail}"


def summary(cmp: CompareOut) -> str:
    return "\n".join([f"## {headline(cmp)}", "", *verdict_table(cmp), *kernel_table(cmp)]) + "\n"


def post_check(gh: GitHub, repo: str, sha: str, cmp: CompareOut, dashboard_url: str | None,
               query: dict[str, str] | None = None) -> tuple[str, dict, bool]:
    """Create or update the check (or, without the checks permission, the commit status).
    Returns ("check" | "status", GitHub's object, created)."""
    name = check_name(cmp.benchmark)
    url = compare_url(cmp, dashboard_url, query)
    try:
        run, created = gh.upsert_check(repo, sha, name, CONCLUSION[cmp.verdict], title(cmp),
                                       summary(cmp), "\n".join(reasons(cmp)) or None, url)
        return "check", run, created
    except GitHubError as e:
        if e.status != 403:
            raise
    status = gh.set_status(repo, sha, name, STATE[cmp.verdict], title(cmp), url)
    return "status", status, True


def error_title(message: str) -> str:
    """`ERROR: <the message's first line>`, cut to fit a check's title and a status's 140."""
    line = next((x.strip() for x in message.splitlines() if x.strip()), "unknown error")
    return f"ERROR: {line if len(line) <= 120 else line[:117] + '...'}"


def post_error_check(gh: GitHub, repo: str, sha: str, benchmark: str, message: str,
                     summary: str, details_url: str | None = None) -> tuple[str, dict, bool]:
    """The check `perfwarden: BENCHMARK` as a failure titled with the error that kept the gate
    from running (a failed commit status where the token may not write checks)."""
    name = check_name(benchmark)
    try:
        run, created = gh.upsert_check(repo, sha, name, "failure", error_title(message), summary,
                                       None, details_url)
        return "check", run, created
    except GitHubError as e:
        if e.status != 403:
            raise
    return "status", gh.set_status(repo, sha, name, "failure", error_title(message),
                                   details_url), True
