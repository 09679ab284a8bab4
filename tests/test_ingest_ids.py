"""`ingest` of many runs: standard error names the ids as ranges with their count, standard output
one id a line; `--json` prints every id in one JSON object. A GitHub API that is down is named by
its URL."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# PostgreSQL copies find nothing more here: the ids are read and printed by the CLI; the batch it
# posts is stored by the routes tests/service/ runs on both databases.
pytestmark = pytest.mark.one_database

PW = [sys.executable, "-m", "service.cli"]
N = 1200


def _records(path, label):
    recs = [{"benchmark": f"many-{label}", "config": {"tp": 1, "batch_size": i + 1}, "label": label,
             "hardware": {"gpu": "cpu", "gpu_count": 1}, "started_at": "2026-11-30T10:00:00Z",
             "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                   "samples": [100.0, 101.0, 99.0]}}} for i in range(N)]
    path.write_text(json.dumps(recs))
    return path


def run(*args):
    return subprocess.run(PW + list(args), capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ), timeout=300)


def test_many_ids_read_as_ranges_and_json_lists_them_all(live_server, tmp_path):
    url, _ = live_server
    r = run("ingest", str(_records(tmp_path / "a.json", "a")), "--no-detect", "--server", url)
    assert r.returncode == 0, r.stderr
    ids = [int(x) for x in r.stdout.split()]
    assert len(ids) == N
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("posted"))
    assert line == f"posted {N} run(s) as one batch: {N} ids: {ids[0]}-{ids[-1]}"
    r = run("ingest", str(_records(tmp_path / "b.json", "b")), "--no-detect", "--server", url,
            "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["ids"]) == N and len(set(out["ids"]) & set(ids)) == 0
    r = run("ingest", str(tmp_path / "b.json"), "--no-detect", "--server", url, "--json",
            "--out", "-")
    assert r.returncode == 64 and "--json and --out -" in r.stderr


def test_github_down_names_the_url():
    from service.github_rest import GitHub, GitHubError

    gh = GitHub("t", "http://127.0.0.1:9")
    gh.backoff_s = 0.0
    with pytest.raises(GitHubError, match=r"cannot reach the GitHub API at "
                                          r"http://127\.0\.0\.1:9/repos/a/b/issues/1/comments"):
        gh.comments("a/b", 1)
    gh.close()
