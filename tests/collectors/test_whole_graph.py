"""A whole-graph nsys capture (nsys without `--cuda-graph-trace=node`) is a GPU trace: its graph
rows are the device work of the steps, step GPU time is measured from them, and the warning says
only what is missing (the kernels inside the graphs).

No whole-graph capture was made on the H200; the test writes one from the real node-level TP2
capture the way nsys records it: the replayed kernels of each graph launch (one correlation id)
become one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row spanning them, with nsys's columns, and leave the
kernel table. The eager kernels stay.
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from collectors.traces import analyze_files
from tests.conftest import H200

NODE = H200 / "resident" / "nsys" / "traces" / "late-graphs.sqlite"

GRAPH_TABLE = """CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL,
    graphExecId INTEGER NOT NULL)"""


OP_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
             "CUPTI_ACTIVITY_KIND_MEMSET")


def whole_graph_export(src: Path, dst: Path) -> int:
    """`src` with every graph replay as one row; returns the graph rows written."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = [t for t in OP_TABLES if t in have]
    ops = " UNION ALL ".join(
        f'SELECT start, "end", deviceId, contextId, streamId, correlationId, globalPid FROM {t}'
        for t in tables)
    con.execute(f"CREATE TEMP VIEW ops AS {ops}")
    con.execute("CREATE TEMP TABLE replayed AS SELECT globalPid AS pid, correlationId AS corr "
                "FROM ops GROUP BY globalPid, correlationId HAVING count(*) > 1")
    con.execute(GRAPH_TABLE)
    # the launch stream: that of the replay's first op; one executable per launch site
    con.execute("""INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE
        SELECT min(o.start), max(o."end"), o.deviceId, o.contextId, NULL,
               (SELECT o2.streamId FROM ops o2 WHERE o2.globalPid = o.globalPid
                AND o2.correlationId = o.correlationId ORDER BY o2.start LIMIT 1),
               o.correlationId, o.globalPid, 1, 1
        FROM ops o JOIN replayed r ON o.globalPid = r.pid AND o.correlationId = r.corr
        GROUP BY o.globalPid, o.correlationId""")
    for t in tables:
        con.execute(f"DELETE FROM {t} WHERE (globalPid, correlationId) IN (SELECT pid, corr "
                    "FROM replayed)")
    n = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()[0]
    con.commit()
    con.close()
    return int(n)


def test_whole_graph_capture_has_step_gpu_time_from_its_graph_rows(tmp_path):
    whole = tmp_path / "late-graphs-whole.sqlite"
    rows = whole_graph_export(NODE, whole)
    node, s = analyze_files([NODE]), analyze_files([whole])
    assert rows >= s["steps"] == node["steps"] == 20
    # the graph rows span their kernels: every step's GPU time is the node capture's
    for k in ("step_gpu_time_us_mean", "step_gpu_time_us_median", "step_gpu_time_us_p95"):
        assert s[k] == pytest.approx(node[k], rel=1e-12), k
    # one graph row per step and rank (the others replay outside the steps)
    graphs = [k for k in s["kernels"] if k["kind"] == "graph"]
    assert sum(k["count"] for k in graphs) == s["graph_replay_ops"] == s["steps"] <= rows
    assert not [w for w in s["warnings"] if "no device work" in w or "CPU trace" in w]
    (said,) = [w for w in s["warnings"] if "whole graphs" in w]
    assert "kernels inside the graphs have no rows" in said and "--cuda-graph-trace=node" in said
    # one lane per device (the launch stream): the aux figures have nothing to measure
    assert {r["role"] for r in s["streams"]} == {"main"} and s["aux_idle_per_step_us"] is None
