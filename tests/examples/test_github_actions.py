"""examples/github-actions/perfwarden.yml: valid YAML of the shape GitHub Actions reads, a dozen
lines that use the composite action (action.yml) with inputs it declares. The action's steps
themselves run in tests/journeys/test_github_action.py."""
from __future__ import annotations

import yaml

from tests.action_runner import load as load_action
from tests.conftest import ROOT

WORKFLOW = ROOT / "examples" / "github-actions" / "perfwarden.yml"


def load() -> dict:
    wf = yaml.safe_load(WORKFLOW.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads a bare `on` as true
    return wf


def test_workflow_is_a_dozen_lines_using_the_action():
    assert len(WORKFLOW.read_text().splitlines()) <= 14
    wf = load()
    assert wf["name"] == "perfwarden" and set(wf["on"]) == {"pull_request", "push"}
    assert wf["permissions"]["checks"] == "write" and wf["permissions"]["statuses"] == "write"
    assert wf["permissions"]["pull-requests"] == "write"
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"  # a CPU runner: the action's defaults suit it
    assert "--preset cpu" in load_action()["inputs"]["collect"]["default"]
    checkout, use = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@")
    assert use["uses"] == "OWNER/perfwarden@v0" and "uses: ./" in WORKFLOW.read_text()
    action = load_action()
    assert set(use["with"]) <= set(action["inputs"])
    required = {k for k, v in action["inputs"].items() if v.get("required")}
    assert required <= set(use["with"])


def test_action_is_a_composite_of_bash_steps():
    action = load_action()
    assert action["runs"]["using"] == "composite"
    assert {"server", "benchmark", "baseline", "collect", "gate-args", "token", "github-token",
            "dashboard-url"} <= set(action["inputs"])
    steps = action["runs"]["steps"]
    for step in steps:
        assert step["shell"] == "bash" and "${{" not in step["run"], step["name"]
    assert steps[-1]["if"] == "always()" and "comment --error" in steps[-1]["run"]
    assert "ingest" in " ".join(s["run"] for s in steps) and "--wait" in steps[3]["run"]


def test_action_defaults_are_the_cpu_presets_measured_gate():
    """The action's default gate and run count are what the CPU preset's measured spread holds
    (collectors/bench/presets.py, docs/results.md)."""
    from collectors.bench.presets import GATE_ARGS, RUNS

    inputs = load_action()["inputs"]
    assert inputs["gate-args"]["default"] == GATE_ARGS["cpu"]
    assert int(inputs["runs"]["default"]) == RUNS["cpu"]
    assert "--preset cpu" in inputs["collect"]["default"]
