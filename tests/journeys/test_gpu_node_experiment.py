"""A sequential experiment on a GPU node whose Python has torch and numpy and nothing of the
service: `python -m collectors experiment --until-decided --server URL` posts each block and
asks the live server for the verdict between blocks; every place that shows the verdict agrees."""
from __future__ import annotations

import importlib.metadata as md
import json
import re
import sys
from pathlib import Path

from tests.conftest import ROOT

from .shell import run
from .test_bisect import SHAPE


def _closure(names: list[str]) -> list[md.Distribution]:
    """The distributions of `names` and of everything they require (torch's own needs)."""
    seen: dict[str, md.Distribution] = {}
    todo = list(names)
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if not name or name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen[name] = dist
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return list(seen.values())


def torch_only_python(folder: Path) -> Path:
    """An interpreter as on a GPU node: isolated (-I -S), its path the standard library, torch,
    numpy with what they require, and this checkout's collectors."""
    site = folder / "site"
    site.mkdir(parents=True)
    for dist in _closure(["torch", "numpy"]):
        top = {Path(str(f)).parts[0] for f in dist.files or []}
        for name in top:
            src = Path(str(dist.locate_file(name)))
            if src.exists() and not (site / name).exists() and not name.startswith(".."):
                (site / name).symlink_to(src)
    (site / "collectors").symlink_to(ROOT / "collectors")
    boot = folder / "boot.py"
    boot.write_text(
        "import runpy, sys\n"
        f"sys.path[:0] = [{str(site)!r}]\n"
        "if sys.argv[1] == '-c':\n"
        "    exec(sys.argv[2])\n"
        "else:\n"
        "    mod = sys.argv[2]\n"
        "    sys.argv = [mod] + sys.argv[3:]\n"
        "    runpy.run_module(mod, run_name='__main__', alter_sys=True)\n")
    python = folder / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S {boot} \"$@\"\n")
    python.chmod(0o755)
    return python


PROBE = ("import importlib.util as u; print(' '.join(m for m in ('torch', 'numpy', 'collectors', "
         "'fastapi', 'sqlalchemy', 'pydantic', 'httpx', 'scipy', 'service') if u.find_spec(m)))")


def test_until_decided_on_a_torch_only_node(served, tmp_path):
    python = torch_only_python(tmp_path / "node")
    r = run([str(python), "-c", PROBE], cwd=tmp_path)
    assert r.stdout.split() == ["torch", "numpy", "collectors"], r.stdout + r.stderr
    arm = (f"{python} -m collectors collect decode --device cpu --trials 3 --steps 16 "
           f"--warmup 2 --threads 1 --shape '{SHAPE}' --quiet --benchmark node-exp --out {{out}}")
    r = run([str(python), "-m", "collectors", "experiment", "--baseline-cmd", arm,
             "--candidate-cmd", arm + " --extra-work 16", "--pairs", "3", "--until-decided",
             "--max-pairs", "5", "--id", "node-exp-1", "--metric", "cpu_tok_s",
             "--threshold", "cpu_tok_s=40", "--server", served.url], cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr  # the candidate does 5x the shared work
    looks = re.findall(r"after (\d) block\(s\): (\w+)", r.stderr)  # one look per block from 3
    assert looks[-1][1] == "fail" and all(v == "inconclusive" for _, v in looks[:-1]), looks
    assert [int(n) for n, _ in looks] == list(range(3, 3 + len(looks)))
    assert "verdict: FAIL" in r.stdout
    assert "cpu_tok_s" in r.stdout and "regression" in r.stdout
    # the server holds every block, and its experiment view gives the same verdict
    runs = served.runs(experiment="node-exp-1")
    assert len(runs) == 2 * int(looks[-1][0]) and {x["experiment"]["arm"] for x in runs} == {"baseline", "candidate"}
    exp = served.get("/api/v1/experiments/node-exp-1")
    assert exp["verdict"]["verdict"] == "fail", json.dumps(exp)[:500]
    # the question the node asked (its metric at its threshold) is the one the view answers
    assert [(m["name"], m["threshold_pct"]) for m in exp["verdict"]["metrics"]] == [("cpu_tok_s", 40.0)]
    assert runs[0]["experiment"]["thresholds"] == {"cpu_tok_s": 40.0}
    # without a server it says what it needs, in one line
    r = run([str(python), "-m", "collectors", "experiment", "--baseline-cmd", arm,
             "--candidate-cmd", arm, "--until-decided"], cwd=tmp_path)
    assert r.returncode == 64 and "--server" in r.stderr and r.stderr.count("\n") == 1
