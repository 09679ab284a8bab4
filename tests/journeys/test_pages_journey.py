"""Journey: an SGLang user ingests `bench_serving` results with the server's log and its profiler
output (a decode capture of ranks 0 and 1 and a prefill capture of rank 0, all given to one
`perfwarden ingest`), then walks the pages at 1400 and 390 px in real Chromium: the run page
(the run's stored trace groups side by side, each with its phase, summary and ordering line), the
benchmark and series pages, /compare against a baseline; no page scrolls sideways, and the run
page and /compare show the same ordering line and decode steps for a run (its own set's, the
prefill never merged in).

The traces are the H200 captures of data/h200/engines with SGLang's range names
(`step[DECODE bs=8]`, `step[EXTEND ...]`), named as SGLang's profiler names its files."""
from __future__ import annotations

import json
import shutil

import httpx
import pytest

from tests.conftest import DATA, H200, drain_jobs
from tests.dashboards.test_browser import SIZES, _open, browser  # noqa: F401
from tests.test_cli import run

pytestmark = pytest.mark.browser
ENGINES = H200 / "engines"
STAMP = "1764583200123"


def _captures(tmp_path, name: str, decode: list[str], prefill: str | None = None) -> list[str]:
    """SGLang's files of one profile: a decode capture per rank, a prefill one of rank 0."""
    d = tmp_path / name
    d.mkdir()
    out = []
    for rank, capture in enumerate(decode):
        out.append(d / f"{STAMP}-TP-{rank}-decode.sqlite.gz")
        shutil.copy(ENGINES / capture, out[-1])
    if prefill:
        out.append(d / f"{STAMP}-TP-0-prefill.sqlite.gz")
        shutil.copy(ENGINES / prefill, out[-1])
    return [str(p) for p in out]


def _ordering(page, selector: str) -> str:
    return " ".join(page.locator(selector).inner_text().split())


def test_sglang_user_walks_the_pages(settings, live_server, browser, tmp_path):  # noqa: F811
    if settings.database_url.startswith("postgresql"):
        pytest.skip("the browser suite runs once, on SQLite")
    url, app = live_server
    common = ["--benchmark", "sglang-serve", "--gpu", "NVIDIA H200", "--gpu-count", "1",
              "--no-detect", "--server", url]
    result, log = DATA / "engines" / "sglang_bench_serving.jsonl", DATA / "engines" / "sglang.log"
    files = _captures(tmp_path, "base", ["nsys-joined-eager.sqlite.gz",
                                          "nsys-joined-graphs.sqlite.gz"],
                      "nsys-serial-eager.sqlite.gz")
    r = run("ingest", str(result), str(log), "--label", "main", "--trace", *files, *common)
    assert r.returncode == 0, r.stderr
    assert "2 trace sets: 3 file(s)" in r.stderr  # the decode set and the prefill trace
    base = int(r.stdout.strip().splitlines()[-1])
    drain_jobs(app)
    stored = httpx.get(f"{url}/api/v1/runs/{base}").json()
    assert [(t["trace_group"], t["phase"], t["state"]) for t in stored["traces"]] == [
        (0, "decode", "done"), (0, "decode", "done"), (1, "prefill", "done")], [
        t.get("error") for t in stored["traces"]]
    own, prefill = stored["trace_summary"], stored["traces"][2]["group_summary"]
    assert (own["steps"], own["prefill_steps"], prefill["steps"], prefill["prefill_steps"]) == (
        10, 2, 5, 1)  # each capture holds 5 decode steps and 1 prefill step
    assert run("baseline", "set", "v1", "--benchmark", "sglang-serve", "--server", url,
               "--run", str(base)).returncode == 0

    # a PR whose decode step no longer joins the shared experts before the routed experts
    pr = tmp_path / "pr.jsonl"
    obj = json.loads(result.read_text().splitlines()[0])  # Python reads and writes Infinity
    obj["output_throughput"] *= 0.9
    pr.write_text(json.dumps(obj) + "\n")
    r = run("ingest", str(pr), str(log), "--label", "pr", "--branch", "late-join", "--trace",
            *_captures(tmp_path, "cand", ["nsys-unjoined-eager.sqlite.gz"]), *common)
    assert r.returncode == 0, r.stderr
    cand = int(r.stdout.strip().splitlines()[-1])
    drain_jobs(app)
    sid = httpx.get(f"{url}/api/v1/runs/{base}").json()["series_id"]

    lines = {}
    for size in SIZES:
        # the run page: two trace sets side by side (one under the other on a phone)
        page, errors = _open(browser, f"{url}/runs/{base}", "journey-run", size)
        sets = page.locator("#trace-sets .trace-set")
        assert sets.count() == 2
        assert [(sets.nth(i).get_attribute("data-group"), sets.nth(i).get_attribute("data-phase"))
                for i in range(2)] == [("0", "decode"), ("1", "prefill")]
        assert page.locator("#trace-sets td.steps").all_inner_texts() == [
            "10 decode · 2 prefill", "5 decode · 1 prefill"]
        cards = page.locator("#trace-sets p.ordering").all_inner_texts()
        assert all(t.startswith("ordering check (moe-routed): ") for t in cards)
        assert [t.split(" · ")[-1] for t in cards] == [own["ordering"]["reason"],
                                                        prefill["ordering"]["reason"]]
        assert _ordering(page, "#ordering") == " ".join(cards[0].split())  # the run's own set
        lines[("run", base, size)] = _ordering(page, "#ordering")
        assert not errors
        page, errors = _open(browser, f"{url}/runs/{cand}", "journey-run-pr", size)
        assert page.locator("#trace-sets").count() == 0  # one set: the summary as before
        lines[("run", cand, size)] = _ordering(page, "#ordering")
        assert not errors
        for path, name in (("/benchmarks/sglang-serve", "journey-benchmark"),
                           (f"/benchmarks/sglang-serve?series={sid}", "journey-series")):
            page, errors = _open(browser, url + path, name, size)
            assert not errors
        page, errors = _open(browser, f"{url}/compare?benchmark=sglang-serve&baseline=v1&"
                             f"run_ids={cand}", "journey-compare", size)
        for rid in (base, cand):
            lines[("compare", rid, size)] = _ordering(page, f"#runs td.run-ordering[data-run='{rid}']")
        steps = page.locator("#trace-steps").inner_text()
        assert "ok" in steps and "hazard" in steps
        # the base side's decode steps are its own set's (10), the prefill trace's never added
        assert page.locator("#trace-steps tr:nth-child(2) td.num").all_inner_texts() == ["10", "2"]
        assert not errors
    # the same verdict and line on both pages, at both sizes
    assert lines[("run", base, "desktop")].startswith("ordering check (moe-routed): ok · ")
    assert lines[("run", cand, "desktop")].startswith("ordering check (moe-routed): hazard · ")
    for (kind, rid, size), text in lines.items():
        if kind == "compare":  # `ok (moe-routed) · ...` there, `ordering check (moe-routed): ok · ...`
            verdict, rest = text.split(" (moe-routed)", 1)
            text = f"ordering check (moe-routed): {verdict}{rest}"
        assert text == lines[("run", rid, "desktop")], (kind, rid, size)
