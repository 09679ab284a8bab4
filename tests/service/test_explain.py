"""Explain and the attribution under it, on real runs: the committed H200 runs (data/h200/runs
and data/h200/determinism, seeded with their nsys traces) and a CPU-made matrix whose planted key
switches the operator (tests/service/planted_matrix.py). Attribution keeps to one branch's
history under the history rule, to one GPU model and count, with Holm-corrected p-values."""
from __future__ import annotations

import html
import re

import pytest

from tests.conftest import H200, LOCAL, minimal_run


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    from tests.service.planted_matrix import make

    return make(tmp_path_factory.mktemp("planted")).parent


def _client(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    return TestClient(create_app(settings), **LOCAL)


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_holm_correction_and_significance_on_the_corrected_p():
    from statsmodels.stats.multitest import multipletests

    from service.stats.attribution import RunFacts, attribute, finding

    rows = [RunFacts({"a": a, "b": b}, 100.0 * (1.5 if a == 2 else 1.0) * (1 + 0.01 * ((i * 7) % 5)),
                     None) for i, (a, b) in enumerate((a, b) for a in (1, 2) for b in "xyz"
                                                       for _ in range(3))]
    fs = attribute(rows, "mean")
    raw = [f.p_value for f in fs]
    assert [f.p_corrected for f in fs] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    assert all(f.p_corrected >= f.p_value for f in fs)
    by = {f.key: f for f in fs}
    assert by["a"].p_corrected < 0.05
    text = finding("mean", fs)
    assert text.startswith("the tok_s run means follow a") and f"p={by['a'].p_corrected:.2g}" in text


def test_attribution_keeps_one_gpu_and_the_history_rule(settings):
    def run(M, mean, o="x", gpus=1, **over):
        return minimal_run(benchmark="attr-rule", config={"tp": 1, "batch_size": M, "order": o},
                           hardware={"gpu": "NVIDIA H200", "gpu_count": gpus},
                           metrics={"tok_s": {"unit": "tok/s", "direction": "higher",
                                              "samples": [mean, mean * 1.001, mean * 0.999]}},
                           **over)
    with _client(settings) as c:
        runs = [run(M, 100.0 * M, o, idempotency_key=f"k{M}{o}") for M in (1, 2, 4) for o in "xy"]
        assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
        q = {"benchmark": "attr-rule"}
        before = c.get("/api/v1/attribution", params=q).json()
        assert before["runs"] == 6 and before["factors"][0]["key"] == "batch_size"
        # a pull request's runs, an experiment's arm and a bisect run stay out of the fit
        odd = [run(1, 9000.0, pr=3, idempotency_key="pr"),
               run(2, 9000.0, experiment={"id": "e1", "arm": "candidate", "block": 1},
                   idempotency_key="exp"),
               run(4, 1.0, branch="feature", idempotency_key="feature")]
        assert c.post("/api/v1/runs/batch", json={"runs": odd}).status_code == 201
        after = c.get("/api/v1/attribution", params=q).json()
        assert after["runs"] == 6 and after["factors"] == before["factors"]
        # another branch's history: its own run and the runs that name no branch
        assert c.get("/api/v1/attribution", params={**q, "branch": "feature"}).json()["runs"] == 7
        # another GPU count: never mixed into one fit
        two = [run(M, 50.0 * M, o, gpus=2, idempotency_key=f"t{M}{o}") for M in (1, 2, 4) for o in "xy"]
        assert c.post("/api/v1/runs/batch", json={"runs": two}).status_code == 201
        r = c.get("/api/v1/attribution", params=q)
        assert r.status_code == 422
        msg = r.json()["error"]["message"]
        assert "NVIDIA H200 x1" in msg and "NVIDIA H200 x2" in msg and "gpu" in msg
        one = c.get("/api/v1/attribution", params={**q, "gpu": "NVIDIA H200 x2"}).json()
        assert one["runs"] == 6
        # the model named without its count still mixes two counts: refused the same way
        r = c.get("/api/v1/attribution", params={**q, "gpu": "NVIDIA H200"})
        assert r.status_code == 422 and "2 GPU counts" in r.json()["error"]["message"], r.text
        assert all(f["p_corrected"] is None or f["p_corrected"] >= f["p_value"]
                   for f in one["factors"])


def test_explain_on_the_committed_h200_runs(settings):
    """TP1 on an H200, M=1/4/7/8 x shared-expert order x CUDA graphs, 5 repeats each, nsys
    traces at M=1 (four cells) and M=8 (overlap, eager), and deterministic-mode runs of five of
    the same cells."""
    from service.seed import seed

    seed(settings, H200 / "runs")
    seed(settings, H200 / "determinism")
    with _client(settings) as c:
        r = c.get("/api/v1/explain", params={"benchmark": "moe-decode"})
        assert r.status_code == 422 and "x2" in r.json()["error"]["message"]  # TP2 runs too
        ex = c.get("/api/v1/explain", params={"benchmark": "moe-decode",
                                              "gpu": "NVIDIA H200 x1"}).json()
        assert ex["key"] == "batch_size" and ex["runs"] == 25
        d = ex["diff"]
        assert d["outlier_levels"] == ["4", "7", "8"] and d["reference_levels"] == ["1"]
        assert d["traced_levels"] == ["8", "1"]
        new = {k["name"]: k for k in d["only_at_outliers"]}
        gone = {k["name"]: k for k in d["gone_at_outliers"]}
        topk_new = [n for n in new if "gatherTopK" in n]
        topk_gone = [n for n in gone if "gatherTopK" in n]
        assert len(topk_new) == 1 and len(topk_gone) == 1 and topk_new != topk_gone
        # the part where the two names differ is shown, not cut to a common prefix
        assert "(int)2" in new[topk_new[0]]["shown"] and "(int)1" in gone[topk_gone[0]]["shown"]
        assert "gatherTopK" in new[topk_new[0]]["shown"]
        det = ex["deterministic"]
        assert (det["runs"], det["identical_runs"], det["repeats"], det["identical_repeats"]) == \
            (5, 5, 25, 25)
        by = {f["key"]: f for f in ex["factors"]}
        assert by["batch_size"]["explains"] > 0.9 and by["batch_size"]["p_corrected"] < 1e-6
        assert by["shared_experts"]["explains"] < 0.05 and by["shared_experts"]["p_corrected"] > 0.05
        sentence = ex["decision"]
        assert sentence.startswith("non-identical repeats follow batch_size (explains 98%")
        assert "at batch_size=8 the kernels `void at::native::sbtopk::gatherTopK" in sentence
        assert "absent at 1 (batch_size=4/7 not traced)" in sentence
        assert "deterministic mode: 5/5 runs bitwise identical (25/25 repeats)" in sentence
        # eager M=4 runs keep some repeats identical, graphs runs none: an interaction
        assert "batch_size x cuda_graphs interact" in sentence
        assert re.search(r"shared_experts explains 0% \(p=0\.\d+\): shared_experts is not the "
                         "cause", sentence)
        # the matrix page reads the report stored when the runs were loaded: the same sentence
        page = c.get("/benchmarks/moe-decode/matrix")
        assert page.status_code == 200
        block = re.search(r'<p id="decision">(.*?)</p>', page.text, re.S)
        assert block and html.unescape(block.group(1)) == sentence
        assert "NVIDIA H200 x1" in _text(page.text)
        table = re.search(r'<table id="explain-kernels">.*?</table>', page.text, re.S).group(0)
        assert "traced batch_size=8 vs 1" in _text(table)
        assert new[topk_new[0]]["shown"] in html.unescape(table)



# the same reads as test_explain_on_the_committed_h200_runs, which runs on both databases
@pytest.mark.one_database
def test_explain_on_the_committed_h200_capture(settings):
    """The matrix `bench/gpu/h200_explain.sh` makes in one command (data/h200/explain, run twice):
    M=1/4/7/8 x shared-expert order, eager, each cell without and with deterministic mode, a
    PyTorch-profiler trace of every cell; every level of the key is traced."""
    from service.seed import seed

    seed(settings, H200 / "explain")
    with _client(settings) as c:
        ex = c.get("/api/v1/explain", params={"benchmark": "moe-decode-explain",
                                              "metric": "determinism"}).json()
        assert ex["key"] == "batch_size" and ex["runs"] == 16
        by = {f["key"]: f for f in ex["factors"]}
        assert by["batch_size"]["p_corrected"] < 0.01
        assert by["shared_experts"]["p_corrected"] > 0.05
        d = ex["diff"]
        assert d["outlier_levels"] == ["4", "7", "8"] and d["reference_levels"] == ["1"]
        assert sorted(d["traced_levels"]) == ["1", "4", "7", "8"]
        new = [k["name"] for k in d["only_at_outliers"]]
        gone = [k["name"] for k in d["gone_at_outliers"]]
        assert any("gatherTopK" in n for n in new) and any("gatherTopK" in n for n in gone)
        det = ex["deterministic"]
        assert det["runs"] == det["identical_runs"] == 16
        sentence = ex["decision"]
        assert sentence.startswith("non-identical repeats follow batch_size")
        assert "at batch_size=4/7/8 the kernels `void at::native::sbtopk::gatherTopK" in sentence
        assert "deterministic mode: 16/16 runs bitwise identical" in sentence
        assert "shared_experts is not the cause" in sentence
        # the matrix page a newcomer opens shows the same decision
        page = c.get("/benchmarks/moe-decode-explain/matrix")
        block = re.search(r'<p id="decision">(.*?)</p>', page.text, re.S)
        assert block and html.unescape(block.group(1)) == sentence
        # and the PR comment's section on the benchmark's matrix says it too
        import argparse

        from service.github.comment import explain_section

        def api(server, method, path, params=None):  # noqa: ANN001 - the CLI client's shape
            return c.request(method, path, params=params).json()

        args = argparse.Namespace(benchmark="moe-decode-explain", server="http://pw",
                                  dashboard_url=None)
        section = html.unescape(explain_section(args, api))  # as GitHub renders the escapes
        assert "What explains the `moe-decode-explain` matrix" in section
        assert "non-identical repeats follow batch_size" in section
        assert "shared_experts is not the cause" in section

def test_explain_names_the_planted_key_and_its_operators(settings, planted):
    from service.seed import seed

    assert seed(settings, planted) == 16
    with _client(settings) as c:
        ex = c.get("/api/v1/explain", params={"benchmark": "planted-matrix"}).json()
    assert ex["key"] == "batch_size" and ex["runs"] == 8
    d = ex["diff"]
    assert d["what"] == "host operators"
    assert d["outlier_levels"] == ["4", "8"] and d["reference_levels"] == ["1", "2"]
    assert "aten::index_add_" in {k["name"] for k in d["only_at_outliers"]}
    assert "aten::randperm" in {k["name"] for k in d["only_at_outliers"]}
    assert {k["name"] for k in d["gone_at_outliers"]} == {"aten::sum"}
    assert ex["deterministic"]["runs"] == 8 and ex["deterministic"]["identical_runs"] == 8
    by = {f["key"]: f for f in ex["factors"]}
    assert by["variant"]["explains"] < 0.05 and by["variant"]["p_corrected"] > 0.05
    assert "`aten::index_add_`" in ex["decision"] and "absent at 1/2" in ex["decision"]
    assert ex["decision"].endswith("variant is not the cause")


def test_explain_without_deterministic_runs_says_how_to_make_them(settings, planted):
    """The planted matrix is not `collect decode`'s (its `variant` key is no option of it): no
    command is suggested that would post decode runs into it; the sentence says what to do."""
    import json

    from service.seed import seed

    recs = [r for r in json.loads((planted / "matrix.json").read_text())
            if not r["config"].get("deterministic")]
    folder = planted.parent / "plain"
    folder.mkdir(exist_ok=True)
    (folder / "matrix.json").write_text(json.dumps(recs))
    (folder / "traces").mkdir(exist_ok=True)
    for f in (planted / "traces").iterdir():
        (folder / "traces" / f.name).write_bytes(f.read_bytes())
    seed(settings, folder)
    with _client(settings) as c:
        ex = c.get("/api/v1/explain", params={"benchmark": "planted-matrix"}).json()
        assert ex["deterministic"]["runs"] == 0 and ex["deterministic"]["command"] is None
        assert ("deterministic mode: no runs of these cells (run each cell again with "
                "`--deterministic on`)") in ex["decision"]
        bad = c.get("/api/v1/explain", params={"benchmark": "nope"})
        assert bad.status_code == 404


def test_shown_names_keep_the_differing_part():
    from collectors.traces.diff import shown_names

    a = ("void at::native::sbtopk::gatherTopK<float, unsigned int, (int)1, (bool)0>"
         "(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int)")
    b = a.replace("(int)1", "(int)2")
    shown = shown_names([a, b, "aten::mm"])
    assert shown["aten::mm"] == "aten::mm"
    assert shown[a] != shown[b] and "(int)1" in shown[a] and "(int)2" in shown[b]
    assert all(len(s) <= 60 for s in shown.values())


class _Row:
    def __init__(self, **config):
        self.config = config


def _decode_cell(**over):
    return {"tp": 1, "batch_size": 1, "shared_experts": "overlap", "cuda_graphs": False,
            "device": "cpu", "steps": 64, "layers": 2, "hidden": 1024, "experts": 4, "top_k": 1,
            "dtype": "float32", "threads": 1, **over}


def test_the_deterministic_command_recreates_the_cells_or_is_not_given():
    """The one `collect decode` command whose records have the cells' configs (shape, threads,
    every batch size and order), or none where one command cannot make them."""
    import shlex

    from service.explain.report import deterministic_command

    rows = [_Row(**_decode_cell(batch_size=m, shared_experts=o)) for m in (16, 1, 4, 8)
            for o in ("overlap", "serial")]
    cmd = shlex.split(deterministic_command(rows, "moe", None))
    at = {cmd[i]: cmd[i + 1] for i in range(3, len(cmd) - 1) if cmd[i].startswith("--")}
    assert at["--batch-sizes"] == "1,4,8,16" and at["--shared-experts"] == "overlap,serial"
    assert at["--threads"] == "1" and at["--layers"] == "2" and at["--graphs"] == "off"
    import json

    assert json.loads(at["--shape"]) == {"hidden": 1024, "experts": 4, "top_k": 1,
                                         "dtype": "float32"}
    assert at["--deterministic"] == "on" and at["--benchmark"] == "moe"
    # two tensor-parallel sizes take two commands; a key decode does not set, none at all
    assert deterministic_command(rows + [_Row(**_decode_cell(tp=2))], "moe", None) is None
    assert deterministic_command([_Row(batch_size=1, variant="a")], "moe", None) is None


def test_runs_without_repeat_digests_are_a_clear_refusal_not_a_crash(settings):
    """Runs of one trial each (no repeats to compare) give 422 naming the metric; the PR
    comment's matrix section is then left out, never the comment."""
    import argparse

    from service.github.comment import explain_section

    runs = [minimal_run(benchmark="one-trial", config={"tp": 1, "batch_size": m},
                        determinism={"repeats": 1, "identical": 1, "digests": ["a"]})
            for m in (1, 2, 4, 8)]
    with _client(settings) as c:
        assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
        r = c.get("/api/v1/explain", params={"benchmark": "one-trial"})
        assert r.status_code == 422, r.text
        assert "2 or more repeat digests" in r.json()["error"]["message"]
        r = c.get("/api/v1/explain", params={"benchmark": "one-trial", "metric": "tok-s"})
        assert r.status_code == 422 and "measure tok-s" in r.json()["error"]["message"], r.text

        def api(server, method, path, params=None):  # noqa: ANN001 - the CLI client's shape
            got = c.request(method, path, params=params)
            if got.status_code >= 400:
                from collectors.errors import Refused
                raise Refused(got.text, got.status_code)
            return got.json()

        args = argparse.Namespace(benchmark="one-trial", server="http://pw", dashboard_url=None)
        assert explain_section(args, api) == ""


def test_levels_are_in_numeric_order():
    from service.stats.attribution import level_key

    assert sorted([16, 1, 8, 4], key=level_key) == [1, 4, 8, 16]
    assert sorted(["b", 2, "a", 1.5], key=level_key) == [1.5, 2, "a", "b"]


# the refresh a trace job queues runs on both databases' queues in dashboards/test_summaries.py
@pytest.mark.one_database
def test_a_trace_analyzed_after_the_report_reaches_the_matrix_page(settings, planted):
    """The matrix's runs arrive first and their report is stored; their traces are analyzed
    later: the analysis queues the report's refresh, and the page then shows the trace diff."""
    import json

    from fastapi.testclient import TestClient

    from service.main import create_app
    from tests.conftest import drain_jobs

    recs = json.loads((planted / "matrix.json").read_text())
    files = [r.pop("trace_files") for r in recs]
    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        ids = c.post("/api/v1/runs/batch", json={"runs": recs}).json()["ids"]
        drain_jobs(app)
        before = c.get("/benchmarks/planted-matrix/matrix").text
        assert "no traces to compare" in _text(before)
        for rid, names in zip(ids, files, strict=True):
            for name in names:
                path = planted / name
                r = c.post(f"/api/v1/runs/{rid}/traces?filename={path.name}",
                           content=path.read_bytes())
                assert r.status_code == 202, r.text
        drain_jobs(app)
        after = _text(c.get("/benchmarks/planted-matrix/matrix").text)
        assert "`aten::index_add_`" in after and "absent at 1/2" in after
    app.state.engine.dispose()
