"""Stream roles are decided once per trace set: on the TP2 CUDA-graph capture every rank names
the stream its graphs were launched on as main (not whichever of twelve near-equal replay streams
is busiest), and a decision made from busy time alone on a near tie is said in a warning."""
from __future__ import annotations

import numpy as np
import pytest

from collectors.traces import analyze_files
from collectors.traces.analysis import project, resolve_steps
from collectors.traces.load import load_traces
from collectors.traces.model import concat_traces
from collectors.traces.roles import stream_roles
from tests.conftest import H200

TP2 = [H200 / "resident" / "torch" / "traces" / f"trace_M1_rank{r}.json.gz" for r in (0, 1)]


def test_every_rank_names_the_graph_launch_stream_main():
    s = analyze_files(TP2)
    mains = [r for r in s["streams"] if r["role"] == "main"]
    assert [(r["rank"], r["gpu"], r["stream"]) for r in mains] == [(0, 0, 7), (1, 1, 7)]
    assert {r["chosen_by"] for r in mains} == {"graph launch stream"}
    assert [r["device_label"] for r in mains] == ["rank 0 / GPU 0", "rank 1 / GPU 1"]
    # one definition of the aux lane on both ranks: their idle per step agree within 5%
    idle = [r["aux_idle_per_step_us"] for r in s["ranks"]]
    assert max(idle) / min(idle) < 1.05
    assert s["aux_idle_per_step_us"] == pytest.approx(sum(idle) / 2, rel=1e-9)
    assert not [w for w in s["warnings"] if "within" in w]


def test_busy_time_alone_on_a_near_tie_is_one_choice_for_the_set_and_a_warning():
    """The same capture with its graph replays hidden (no op counted as one): rank 0's
    busiest streams (175, 179, 183) lie within 3% of each other; the set still agrees on one
    main stream, and the warning names the near tie and the flag that decides it."""
    trace = concat_traces(load_traces(TP2, jobs=1))
    opts = resolve_steps(trace)
    roles = stream_roles(trace, project(trace, str(opts.step_regex)), opts,
                         replay=np.zeros(len(trace.ops), dtype=bool))
    assert set(roles.main) == {0, 2} and len(set(roles.main.values())) == 1
    assert roles.how[0] == "busiest" and roles.how[2] in ("busiest", "the set's main stream")
    ties = [w for w in roles.notes if "within" in w and "--main-stream 0:STREAM" in w]
    assert ties and ties[0].startswith("rank 0 / GPU 0: streams 175 and 179")
