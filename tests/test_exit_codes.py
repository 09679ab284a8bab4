"""Exit codes as sysexits.h numbers them (collectors/errors.py): 64 usage, 65 bad input, 69 a
service that cannot be reached, 2 any other error; `--version`; a mistyped flag answered with
the subcommand's usage."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from collectors.errors import EXIT_DATAERR, EXIT_ERROR, EXIT_UNAVAILABLE, for_status
from service.github.comment import github_error
from service.github_rest import GitHub, GitHubError
from service.version import VERSION
from tests.conftest import DATA, ROOT
from tests.github_standin import TOKEN, FakeGitHub

PW = [sys.executable, "-m", "service.cli"]
NODE = [sys.executable, "-m", "collectors"]
DOWN = "http://127.0.0.1:9"  # the discard port: nothing listens


def run(cmd, *args, env=None):
    return subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("cmd", [PW, NODE])
def test_version(cmd):
    r = run(cmd, "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"perfwarden {VERSION}"


@pytest.mark.parametrize("argv,usage", [
    (["gate", "--server", DOWN, "--benchmrk", "x"], "usage: perfwarden gate "),
    (["baseline", "set", "v1", "--benchmark", "b", "--server", DOWN, "--run", "1", "--force"],
     "usage: perfwarden baseline set "),
    (["collect", "decode", "--device", "cpu", "--trails", "3"], "usage: perfwarden collect decode "),
    (["ingest", "x.json", "--comit", "abc"], "usage: perfwarden ingest "),
])
def test_a_mistyped_flag_prints_the_subcommands_usage_exit_64(argv, usage):
    r = run(PW, *argv)
    assert r.returncode == 64, r.stderr
    assert r.stderr.startswith(usage), r.stderr
    typo = next(a for a in argv if a in ("--benchmrk", "--force", "--trails", "--comit"))
    assert f"unrecognized arguments: {typo}" in r.stderr


def test_usage_errors_exit_64():
    r = run(PW, "gate", "--server", DOWN, "--benchmark", "b", "--run", "1")
    assert r.returncode == 64 and "give --benchmark and --baseline" in r.stderr
    r = run(PW, "gate")  # a required flag missing: the subcommand's usage
    assert r.returncode == 64 and r.stderr.startswith("usage: perfwarden gate ")
    r = run(PW, "gate", "--server", DOWN, "--benchmark", "b", "--baseline", "v", "--run", "1",
            "--threshold", "tok_s")
    assert r.returncode == 64 and "tok_s" in r.stderr
    r = run(PW, "nonsense")
    assert r.returncode == 64 and "invalid choice" in r.stderr
    r = run(NODE, "collect", "decode", "--steps", "-1")
    assert r.returncode == 64


def test_bad_input_exits_65(tmp_path):
    r = run(PW, "analyze", str(tmp_path / "gone.json.gz"))
    assert r.returncode == 65 and "no such file" in r.stderr
    r = run(PW, "ingest", str(DATA / "engines" / "serve_zero.json"))
    assert r.returncode == 65 and "no request completed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_an_unreachable_server_exits_69_naming_its_url(tmp_path):
    r = run(PW, "gate", "--server", DOWN, "--benchmark", "b", "--baseline", "v", "--run", "1")
    assert r.returncode == 69 and f"cannot reach {DOWN}" in r.stderr
    r = run(PW, "ingest", str(DATA / "engines" / "serve.json"), "--benchmark", "glm",
            "--no-detect", "--gpu", "cpu", "--config", "tp=1", "--server", DOWN)  # the collectors' client (urllib)
    assert r.returncode == 69 and f"cannot reach {DOWN}" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run(PW, "comment", "--server", DOWN, "--benchmark", "b", "--baseline", "v", "--run", "1",
            "--repo", "acme/engine", "--pr", "1")
    assert r.returncode == 69
    # a record with its trace, as the action's profiled collect writes it: the upload's error
    import json
    import shutil

    from tests.conftest import H200, minimal_run

    (tmp_path / "traces").mkdir()
    shutil.copy(H200 / "explain" / "traces" / "trace_M1_rank0.json.gz", tmp_path / "traces")
    (tmp_path / "run.json").write_text(json.dumps(
        [minimal_run(trace_files=["traces/trace_M1_rank0.json.gz"])]))
    r = run(PW, "ingest", str(tmp_path / "run.json"), "--server", DOWN)
    assert r.returncode == 69 and r.stderr.strip().startswith(f"error: cannot reach {DOWN}"), \
        r.stderr


def test_in_a_bisect_every_error_of_ours_stops_it():
    r = run(PW, "gate", "--server", DOWN, "--benchmark", "b", "--baseline", "v", "--run", "1",
            "--bisect")
    assert r.returncode == 128
    r = run(PW, "gate", "--server", DOWN, "--bisect", "--benchmrk", "b")
    assert r.returncode == 128 and "usage: perfwarden gate" in r.stderr


def test_github_errors_map_to_exit_codes():
    with GitHub(TOKEN, DOWN, timeout=2, backoff_s=0) as gh:
        with pytest.raises(GitHubError) as e:
            gh.comments("acme/engine", 1)
    assert DOWN in str(e.value)  # GitHub down: the message names the URL
    assert github_error(e.value).code == EXIT_UNAVAILABLE
    for status, code in ((404, EXIT_DATAERR), (502, EXIT_UNAVAILABLE), (401, EXIT_ERROR)):
        fake = FakeGitHub(status=status) if status != 401 else FakeGitHub()
        try:
            with GitHub(TOKEN if status != 401 else "wrong", fake.url, backoff_s=0) as gh:
                with pytest.raises(GitHubError) as e:
                    gh.comments("acme/engine", 1)
        finally:
            fake.close()
        assert github_error(e.value).code == code, (status, str(e.value))
    assert for_status("x", 503).code == EXIT_UNAVAILABLE
    assert for_status("x", 422).code == EXIT_DATAERR and for_status("x", 403).code == EXIT_ERROR
