"""Journey (spec/api.md, One experiment one answer): one `--until-decided` experiment, and
every place that shows its verdict. The CLI runs the arms against a live server (the looks
are stored with the runs), then the gate API, the experiments API, the PR comment's markdown and
the experiment page are asked; each gives the same verdict, change and interval, judged at
alpha / looks with the level printed as such."""
from __future__ import annotations

import re
import sys

import httpx
import pytest

from service.format import interval, level_pct, pct
from tests.test_cli import run

ARM = (
    "import json, sys, pathlib\n"
    "out, arm = pathlib.Path(sys.argv[1]), sys.argv[2]\n"
    "n = len(list(out.parent.glob('*.json')))\n"
    "block = n // 2\n"
    "drift = 1 + 0.02 * ((block * 7) % 5 - 2)\n"  # the machine drifts; both arms of a block alike
    "wobble = 0.002 * ((block * 3) % 4 - 1.5)\n"  # block-to-block noise of the difference
    "level = 1000.0 * drift * ((0.985 + wobble) if arm == 'candidate' else 1.0)\n"
    "rec = {'benchmark': 'journey', 'config': {'batch_size': 1, 'order': 'late' if arm ==\n"
    "       'candidate' else 'overlap'}, 'started_at': f'2026-11-01T00:{n:02d}:00Z',\n"
    "       'hardware': {'gpu': 'NVIDIA H200', 'gpu_count': 1},\n"
    "       'metrics': {'tok_s': {'unit': 'tok/s', 'direction': 'higher',\n"
    "                             'samples': [level, level * 1.0002, level * 0.9998]}}}\n"
    "out.write_text(json.dumps([rec]))\n")


@pytest.mark.one_database  # the experiments' SQL on both databases: tests/service/test_experiments.py
def test_one_experiment_one_answer_everywhere(live_server, tmp_path):
    url, _ = live_server
    script = tmp_path / "arm.py"
    script.write_text(ARM)
    cmd = f"{sys.executable} {script} {{out}}"
    # 1. the experiment: --pairs 3 --max-pairs 6 plans 6 - 3 + 1 = 4 looks, stored with its runs
    r = run("experiment", "--baseline-cmd", f"{cmd} baseline", "--candidate-cmd",
            f"{cmd} candidate", "--pairs", "3", "--until-decided", "--max-pairs", "6",
            "--id", "journey-1", "--server", url, "--workdir", str(tmp_path / "w"))
    assert r.returncode == 1, r.stdout + r.stderr  # a 1.5% drop past the 0.5% threshold
    printout = r.stdout

    # 2. the gate API and 3. the experiments API
    g = httpx.post(f"{url}/api/v1/gate", json={"experiment": "journey-1"}).json()
    shown = httpx.get(f"{url}/api/v1/experiments/journey-1").json()
    assert g["looks"] == 4 and g["alpha"] == 0.05
    assert shown["verdict"] == g
    m = g["metrics"][0]
    assert g["verdict"] == "fail" and m["verdict"] == "regression"
    ci = interval(m["ci_low_pct"], m["ci_high_pct"])
    level = level_pct(0.05 / 4)  # "98.75%"
    assert level == "98.75%" and f"{level} CI" in m["reason"]
    assert m["ci_low_pct"] > -100 and m["ci_high_pct"] < 0

    # 4. the PR comment (markdown, dry run) from the same server
    r = run("comment", "--server", url, "--experiment", "journey-1", "--repo", "acme/engine",
            "--pr", "7", "--dry-run")
    assert r.returncode == 0, r.stderr
    markdown = r.stdout

    # 5. the experiment page
    page = httpx.get(f"{url}/experiments/journey-1").text

    # the CLI printout: its verdict line, and the tok_s row's change and interval
    assert printout.count("verdict: FAIL") == 1 and f"{level} CI" in printout
    row = next(x for x in printout.splitlines() if x.strip().startswith("tok_s"))
    assert pct(m["delta_pct"]) in row and ci in row and "regression" in row
    # the comment: verdict, level, change and interval
    assert "**FAIL**" in markdown and f"change ({level} CI)" in markdown
    assert f"{pct(m['delta_pct'])} ({ci})" in markdown and "over 4 looks" in markdown
    # the page: verdict, level, change and interval
    assert re.search(r'id="verdict" class="fail">FAIL<', page)
    assert f"{level} CI" in page and ci in page and pct(m["delta_pct"]) in page
