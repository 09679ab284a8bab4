"""THE trace pipeline: the server's set analysis, the CLI's and the profile pass's are one path
(collectors/traces/pipeline.py), and the rank in a file's name is read in one place."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from collectors.engines.traces import trace_set
from collectors.traces import pipeline
from collectors.traces.analysis import project, resolve_steps
from collectors.traces.load import load_traces, rank_of
from collectors.traces.model import concat_traces
from collectors.traces.options import Options
from collectors.traces.pipeline import SERVER_CHECK, analyze_files
from service import format as fmt
from service.traces import analysis

ROOT = Path(__file__).resolve().parents[2]
TP2 = sorted((ROOT / "data/h200/resident/torch/traces").glob("*.json.gz"))


@pytest.mark.parametrize("name,rank", [("trace_M1_rank3.json.gz", 3), ("rank_2.json", 2),
                                       ("abc-TP-5-decode.trace.json.gz", 5), ("tp7.sqlite", 7),
                                       ("trace.json.gz", None)])
def test_rank_from_a_file_name_one_rule(name, rank):
    assert rank_of(name) == rank
    assert fmt.trace_rank(name) == (f", rank {rank}" if rank is not None else "")


def test_server_set_is_the_pipeline_with_the_uploaded_names(tmp_path):
    stored = []
    for i, p in enumerate(TP2):  # stored under their content hash, as uploads are
        dst = tmp_path / f"{i:02d}ab"
        dst.write_bytes(p.read_bytes())
        stored.append((dst, p.name))
    server = analysis.analyze_set(stored)
    direct = analyze_files(TP2, check=SERVER_CHECK)
    assert [r["file"] for r in server["ranks"]] == [p.name for p in TP2]
    assert [r["rank"] for r in server["ranks"]] == [0, 1]
    for key in ("steps", "aux_gap_mean_us", "aux_gap_p95_us", "aux_main_overlap_us_per_step",
                "step_gpu_time_us_median", "ranks", "ordering", "streams"):
        assert server[key] == direct[key], key
    assert server["source"] == ", ".join(p.name for p in TP2)
    assert len(server["kernels"]) <= analysis.KERNELS_KEPT


def test_sets_order_by_the_same_rank_rule(tmp_path):
    for name in ("x-TP-1-decode.trace.json.gz", "x-TP-0-decode.trace.json.gz"):
        (tmp_path / name).write_bytes(TP2[0].read_bytes())
    assert [rank_of(p.name) for p in trace_set([tmp_path])] == [0, 1]


NSYS = ROOT / "data/h200/resident/nsys/traces"


@pytest.mark.parametrize("files", [TP2, [NSYS / "overlap-eager.sqlite", NSYS / "late-graphs.sqlite"]],
                         ids=["kineto-tp2", "nsys-eager-and-graphs"])
def test_a_set_whose_ranks_were_analyzed_is_not_parsed_again(tmp_path, monkeypatch, files):
    """The service analyzes each rank as it arrives, keeping its loaded columns; the set's
    analysis then reads them (no trace file parsed twice) and its summary is the one the files
    give."""
    from collectors.traces import load

    plain = analyze_files(files, check=SERVER_CHECK)
    kept = tmp_path / "columns"
    singles = [analyze_files([f], check=SERVER_CHECK, keep_in=kept) for f in files]
    assert singles == [analyze_files([f], check=SERVER_CHECK) for f in files]
    assert len(list(kept.glob("*.npz"))) == len(files)

    def no_parse(*a, **k):
        raise AssertionError(f"parsed again: {a[0]}")

    monkeypatch.setattr(load, "load_trace", no_parse)
    assert analyze_files(files, check=SERVER_CHECK, keep_in=kept, jobs=1) == plain
    monkeypatch.undo()
    broken = sorted(kept.glob("*.npz"))[0]
    broken.write_bytes(broken.read_bytes()[:100])  # unreadable columns: the file is parsed
    assert analyze_files(files, check=SERVER_CHECK, keep_in=kept, jobs=1) == plain


def test_columns_that_cannot_be_kept_cost_only_time(tmp_path):
    """Keeping a rank's columns saves time only: where they cannot be written (here the folder
    is a file), or an empty file stands in their place, the analysis is the same."""
    blocked = tmp_path / "columns"
    blocked.write_text("not a folder")
    assert analyze_files(TP2[:1], check=SERVER_CHECK, keep_in=blocked) == \
        analyze_files(TP2[:1], check=SERVER_CHECK)
    from collectors.traces import columns
    from collectors.traces.steps import keep_regex

    folder = tmp_path / "kept"
    folder.mkdir()
    # the key of a file loaded with some step filter; an empty file there reads as none
    key = columns.key_path(folder, TP2[0], keep_regex(None, None, None))
    key.write_bytes(b"")
    assert columns.read(key) is None


RANK_KEYS = ("steps", "aux_gap_count", "aux_gap_mean_us", "aux_gap_median_us", "aux_gap_p95_us",
             "aux_bubble_count", "aux_idle_per_step_us", "aux_busy_per_step_us",
             "aux_main_overlap_us_per_step", "step_gpu_time_us_mean", "step_gpu_time_us_median",
             "step_gpu_time_us_p95")


@pytest.mark.parametrize("files", [TP2, [NSYS / "overlap-eager.sqlite", NSYS / "late-graphs.sqlite"]],
                         ids=["kineto-tp2", "nsys-eager-and-graphs"])
def test_each_rank_row_of_a_set_is_what_its_file_gives_alone(files):
    """A set's rank rows (one per process) select their steps' groups from lanes merged once for
    the whole set: each holds the figures its own file gives alone (the file's process rows
    where it holds several processes, as each nsys file here does), and the set's figures are
    those of all the steps together."""
    whole = analyze_files(files)
    alone = [analyze_files([p]) for p in files]
    want = [{k: r[k] for k in RANK_KEYS} for one in alone for r in (one["ranks"] or [one])]
    got = [{k: r[k] for k in RANK_KEYS} for r in whole["ranks"]]
    assert got == want
    assert whole["steps"] == sum(one["steps"] for one in alone)
    assert whole["aux_gap_count"] == sum(one["aux_gap_count"] for one in alone)
    assert whole["aux_gap_count"] > 0 and len({r["aux_gap_mean_us"] for r in want}) == len(want)


SETS = [TP2, [NSYS / "overlap-eager.sqlite", NSYS / "late-graphs.sqlite"],
        [TP2[0], NSYS / "late-graphs.sqlite", TP2[1]]]


@pytest.mark.parametrize("files", SETS, ids=["kineto-tp2", "nsys-eager-and-graphs", "mixed"])
def test_a_sets_projection_joined_from_its_ranks_is_the_joined_traces(files):
    """Each rank is projected onto its steps in the process that loads it; the set's projection
    joined from those is, array for array, the one made on the joined trace, and a rank made
    with another step regex than the set's is projected again with the set's."""
    opts = Options()
    traces = load_traces(files, then=functools.partial(pipeline.rank_projection, opts))
    trace = concat_traces(traces)
    regex = str(resolve_steps(trace, opts).step_regex)
    joined = pipeline.joined_projection(traces, regex)
    made = project(trace, regex)
    assert joined is not None and made.step_start_ns.size > 0
    for f in ("op_step", "step_start_ns", "step_end_ns", "step_proc", "op_call_start_ns",
              "op_call_thread"):
        assert np.array_equal(getattr(joined, f), getattr(made, f)), f
    assert joined.step_names == made.step_names
    traces[-1].prepared = ("(?!)", traces[-1].prepared[1])
    assert pipeline.joined_projection(traces, regex) is None


def test_a_set_analyzed_with_its_ranks_projections_is_analyzed_as_one_trace(monkeypatch):
    """`analyze_files` of a set projects no step in its own process (the ranks' projections are
    joined), and its summary is the one a projection of the joined trace gives."""
    files = SETS[1]
    calls: list[int] = []  # this process's calls only: the loading processes are forked
    real = pipeline.project
    monkeypatch.setattr(pipeline, "project", lambda *a: calls.append(1) or real(*a))
    joined = analyze_files(files, jobs=2)  # two loading processes whatever the cores
    assert calls == []
    monkeypatch.setattr(pipeline, "joined_projection", lambda traces, regex: None)
    assert analyze_files(files, jobs=2) == joined and calls == [1]
