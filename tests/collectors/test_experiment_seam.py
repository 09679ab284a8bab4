"""One experiment runner for both commands: collectors/experiment.py keeps the books (complete
blocks, `{out}`, the judge's flush and verdict) with the judge passed in, and `--threshold` is
read in one place."""
from __future__ import annotations

import json
import sys

import pytest

from collectors.errors import CliError
from collectors.experiment import ExperimentConfig, Judge, check_commands, conduct
from collectors.options import gate_fields, thresholds

ARM = ("import json, sys, pathlib\n"
       "out, arm = pathlib.Path(sys.argv[1]), sys.argv[2]\n"
       "n = len(list(out.parent.glob('*.json')))\n"
       "if arm == 'candidate' and n >= 5:\n"
       "    sys.exit(4)\n"
       "rec = {'benchmark': 'fake', 'config': {'batch_size': 1}, 'started_at':\n"
       "       f'2026-11-01T00:{n:02d}:00Z', 'hardware': {'gpu': 'cpu', 'gpu_count': 1},\n"
       "       'metrics': {'tok_s': {'unit': 'tok/s', 'direction': 'higher',\n"
       "                             'samples': [100.0 + n, 100.5 + n]}}}\n"
       "out.write_text(json.dumps([rec]))\n")


class Recorder(Judge):
    """A judge that keeps what it is handed and stops after the third block."""

    where = "test"

    def __init__(self, body: dict):
        super().__init__(body)
        self.taken: list[int] = []

    def flush(self, records: list[dict]) -> None:
        self.taken = sorted({r["experiment"]["block"] for r in records})

    def verdict(self) -> dict:
        return {"verdict": "fail" if len(self.taken) >= 3 else "inconclusive"}


def _cfg(tmp_path, pairs: int, max_pairs: int) -> ExperimentConfig:
    script = tmp_path / "arm.py"
    script.write_text(ARM)
    cmd = f"{sys.executable} {script} {{out}}"
    return ExperimentConfig(baseline_cmd=cmd + " baseline", candidate_cmd=cmd + " candidate",
                            pairs=pairs, max_pairs=max_pairs, exp_id="seam",
                            workdir=str(tmp_path / "w"), quiet=True)


def test_the_judge_decides_between_blocks_and_sees_only_complete_blocks(tmp_path):
    cfg = _cfg(tmp_path, pairs=2, max_pairs=6)
    judge = Recorder({"experiment": "seam", "max_looks": cfg.looks})
    out = tmp_path / "records.json"
    outcome = conduct(cfg, judge, until_decided=True, out=str(out))
    assert outcome.blocks == [0, 1, 2] and judge.taken == [0, 1, 2]  # stopped at the 3rd block
    assert outcome.result == {"verdict": "fail"} and outcome.judged_by == "test"
    recs = json.loads(out.read_text())
    assert {r["experiment"]["looks"] for r in recs} == {5} and len(recs) == 6


def test_a_failing_arm_hands_the_finished_blocks_over_and_says_so(tmp_path):
    # block 3 runs baseline then candidate (ABBA...); its candidate is the 8th file and fails
    cfg = _cfg(tmp_path, pairs=4, max_pairs=0)
    judge = Recorder({"experiment": "seam", "max_looks": 1})
    out = tmp_path / "partial.json"
    with pytest.raises(CliError, match=r"block 3, candidate arm: the command exited 4.*"
                                       r"experiment seam stopped; 3 finished block"):
        conduct(cfg, judge, until_decided=False, out=str(out))
    assert (tmp_path / "w" / "b003-baseline.json").is_file()  # ran, but its block is not complete
    assert judge.taken == [0, 1, 2]  # the incomplete block 3 is neither written nor judged
    assert sorted({r["experiment"]["block"] for r in json.loads(out.read_text())}) == [0, 1, 2]


def test_commands_must_write_to_out_and_thresholds_are_read_once():
    with pytest.raises(CliError, match=r"--candidate-cmd: the command must write"):
        check_commands("bench {out}", "bench")
    assert thresholds(["tok_s=2", "cpu_tok_s=25"]) == {"tok_s": 2.0, "cpu_tok_s": 25.0}
    with pytest.raises(CliError, match=r"--threshold 'tok_s': expected METRIC=PERCENT"):
        thresholds(["tok_s"])
    assert gate_fields(None, ["tok_s=1"], ["a,b", "c"]) == {"thresholds": {"tok_s": 1.0},
                                                          "vary": ["a", "b", "c"]}
    # the question an experiment's records carry: each name once, nothing empty, nothing a
    # record would be refused for after its first block ran
    assert gate_fields(["tok_s", " tok_s", ""], None, [",", "a", "a"]) == {
        "metrics": ["tok_s"], "vary": ["a"]}
    for bad in ("=5", "tok_s=nan", "tok_s=inf", "tok_s=-1"):
        with pytest.raises(CliError, match=r"expected METRIC=PERCENT, a metric name and a finite"):
            thresholds([bad])
    with pytest.raises(CliError, match=r"--metric: 51 given, at most 50"):
        gate_fields([f"m{i}" for i in range(51)], None, None)


def test_perfwarden_passes_its_judge_into_the_collectors_experiment_command(monkeypatch):
    """`perfwarden experiment` is the collectors' command with the local judge passed in, not a
    parser re-bound after the fact: both parsers reach the same function."""
    import collectors.cli.experiment as node
    import service.cli as pw
    from service.cli.experiment import JUDGING

    seen = []
    monkeypatch.setattr(node, "cmd_experiment", lambda args, judging: seen.append(judging) or 0)
    argv = ["experiment", "--baseline-cmd", "a {out}", "--candidate-cmd", "b {out}"]
    assert pw.main(argv) == 0
    from collectors.cli import main as node_main

    assert node_main(argv) == 0
    assert seen == [JUDGING, node.ON_NODE]
