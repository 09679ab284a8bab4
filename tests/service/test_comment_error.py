"""`perfwarden comment --error MESSAGE`: when the gate could not run, a failed check titled with
the error and a PR comment saying why, against the GitHub stand-in."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.github_standin import TOKEN, FakeGitHub

SHA = "d" * 40
MESSAGE = ("error: http://127.0.0.1:8000 answered 404: no baseline named 'mian' of moe-decode "
           "(did you mean label:mian?) <script>x</script> | [link](http://evil)\nsecond line")


def comment(gh_url: str, *args: str, summary: str | None = None):
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh_url}
    env.pop("GITHUB_STEP_SUMMARY", None)
    if summary:
        env["GITHUB_STEP_SUMMARY"] = summary
    return subprocess.run([sys.executable, "-m", "service.cli", "comment", "--server",
                           "http://127.0.0.1:9", "--repo", "acme/engine", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


@pytest.fixture
def gh():
    f = FakeGitHub()
    yield f
    f.close()


def test_an_error_posts_a_failed_check_and_a_comment_saying_why(gh, tmp_path):
    summary = tmp_path / "summary.md"
    r = comment(gh.url, "--benchmark", "moe-decode", "--baseline", "mian", "--pr", "7", "--check",
                "--sha", SHA, "--error", MESSAGE, summary=str(summary))
    assert r.returncode == 0, r.stderr
    (check,) = gh.check_runs.values()
    assert check["head_sha"] == SHA and check["name"] == "perfwarden: moe-decode"
    assert check["conclusion"] == "failure" and check["status"] == "completed"
    title = check["output"]["title"]
    assert title.startswith("ERROR: error: http://127.0.0.1:8000 answered 404: no baseline named")
    assert "\n" not in title and "second line" not in title and len(title) <= 127
    (c,) = gh.comments.values()
    body = c["body"]
    assert body.startswith("<!-- perfwarden:moe-decode:mian -->")
    assert "could not run" in body and "no baseline named 'mian'" in body
    assert "second line" in body
    assert "<script>" not in body and "&lt;script&gt;" in body  # escaped, shown as text
    assert "[link](http" not in body and r"\[link\]\(http" in body
    assert "could not run" in summary.read_text()
    assert "ERROR: " in r.stderr and TOKEN not in r.stderr
    # the job runs again: the same comment and the same check are edited, not added
    r = comment(gh.url, "--benchmark", "moe-decode", "--baseline", "mian", "--pr", "7", "--check",
                "--sha", SHA, "--error", "cannot reach http://127.0.0.1:8000: refused")
    assert r.returncode == 0, r.stderr
    assert len(gh.comments) == 1 and len(gh.check_runs) == 1
    assert next(iter(gh.check_runs.values()))["output"]["title"] == \
        "ERROR: cannot reach http://127.0.0.1:8000: refused"


def test_an_error_falls_back_to_a_failed_status_without_the_checks_scope():
    f = FakeGitHub(checks_forbidden=True)
    try:
        r = comment(f.url, "--benchmark", "moe-decode", "--check", "--sha", SHA, "--error",
                    "x" * 300)
        assert r.returncode == 0, r.stderr
        (st,) = f.statuses
        assert st["state"] == "failure" and st["description"].startswith("ERROR: xxx")
        assert len(st["description"]) <= 140 and not f.comments
    finally:
        f.close()


def test_an_error_report_needs_its_benchmark_and_commit(gh):
    r = comment(gh.url, "--pr", "7", "--error", "boom")
    assert r.returncode == 64 and "--benchmark" in r.stderr
    r = comment(gh.url, "--benchmark", "b", "--check", "--error", "boom")
    assert r.returncode == 64 and "--sha" in r.stderr
    assert not gh.requests  # nothing was posted
    r = comment("http://127.0.0.1:9", "--benchmark", "b", "--pr", "7", "--error", "boom")
    assert r.returncode == 69 and "http://127.0.0.1:9" in r.stderr
