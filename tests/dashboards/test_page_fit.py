"""Every page at 1400 and 390 px in real Chromium (Debian's package): nothing scrolls the page
sideways, the run page's configuration shows every value, a serving engine's decode timeline is
framed on each step, trace sets of a run sit side by side with their ordering lines, alerts show
40-character commits short, the series page's baseline band is drawn and its legend names each
trace once, its recent runs are the series', the matrix compares each cell with the baseline."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import time

import httpx
import pytest

from tests.conftest import H200, drain_jobs, h200_records
from tests.dashboards.test_browser import SIZES, _boxes, _open, browser, seeded, seeded_once  # noqa: F401
from tests.test_cli import run

pytestmark = pytest.mark.browser
ENGINES = H200 / "engines"
# an SGLang server's profile as its own profiler names the files: the decode capture of ranks 0
# and 1 and the prefill capture of rank 0 (the H200 captures with SGLang's range names,
# step[DECODE bs=8]); `perfwarden ingest --trace` stores them as two groups of the run
SGLANG = {"1764583200123-TP-0-decode.sqlite.gz": "nsys-joined-eager.sqlite.gz",
          "1764583200123-TP-1-decode.sqlite.gz": "nsys-joined-graphs.sqlite.gz",
          "1764583200123-TP-0-prefill.sqlite.gz": "nsys-unjoined-eager.sqlite.gz"}


def engine_run(url: str, app, tmp_path, benchmark: str = "sglang-decode") -> int:
    """A run ingested by the CLI with an SGLang decode set (2 ranks) and a prefill trace of
    rank 0 (`--trace` given all three), analyzed."""
    rec = h200_records("noise", "graphs")[0]
    rec.update(benchmark=benchmark, label="sglang", commit="3f2a9c1d" * 5)
    d = tmp_path / benchmark
    d.mkdir()
    (d / "run.json").write_text(json.dumps([rec]))
    for name, capture in SGLANG.items():
        shutil.copy(ENGINES / capture, d / name)
    r = run("ingest", str(d / "run.json"), "--no-detect", "--server", url,
            "--trace", *[str(d / n) for n in SGLANG])
    assert r.returncode == 0, r.stderr
    assert "2 trace sets: 3 file(s)" in r.stderr
    drain_jobs(app)
    return int(r.stdout.split()[-1])


def _values_in_view(page, table: str, width: int) -> list[str]:
    """The value column of a key/value table: each cell shown whole inside the window, and the
    table's own box not scrolling."""
    cells = _boxes(page, f"{table} tr td:nth-child(2)")
    assert cells, table
    for c in cells:
        assert c["visible"] and c["w"] > 10 and c["x"] >= 0 and c["right"] <= width + 0.5, (
            table, width, c)
    scroll = page.evaluate(f"(() => {{ const e = document.querySelector('{table}').parentElement;"
                           " return e.scrollWidth - e.clientWidth; })()")
    assert scroll <= 1, f"{table} scrolls {scroll} px inside its box at {width} px"
    return [c["text"] for c in cells]


def _step_framing(page) -> list[float]:
    """Per step drawn in a timeline: the share of its panel's x range that the step's work
    fills (steps told apart by the step number each bar carries)."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.chart.timeline')).flatMap(
        el => {
        const lay = el._fullLayout, out = [];
        for (const key of Object.keys(lay).filter(k => /^xaxis\\d*$/.test(k))) {
            const id = 'x' + key.slice(5), r = lay[key].range, span = {};
            for (const t of el._fullData.filter(t => (t.xaxis || 'x') === id && t.customdata))
                t.base.forEach((b, i) => {
                    const s = t.customdata[i][2], e = span[s] || [Infinity, -Infinity];
                    span[s] = [Math.min(e[0], b), Math.max(e[1], b + t.x[i])]; });
            for (const [lo, hi] of Object.values(span)) out.push((hi - lo) / (r[1] - r[0]));
        }
        return out; })""")


def test_engine_run_page_at_both_sizes(settings, live_server, browser, tmp_path):  # noqa: F811
    if settings.database_url.startswith("postgresql"):
        pytest.skip("the browser suite runs once, on SQLite")
    url, app = live_server
    rid = engine_run(url, app, tmp_path)
    stored = httpx.get(f"{url}/api/v1/runs/{rid}").json()
    config = stored["config"]
    # the stored groups: the decode set (both ranks) is the run's own, the prefill trace group 1
    groups = {t["filename"]: (t["trace_group"], t["phase"]) for t in stored["traces"]}
    assert groups == {n: (1, "prefill") if "prefill" in n else (0, "decode") for n in SGLANG}
    own, other = stored["trace_summary"], stored["traces"][-1]["group_summary"]
    assert len(own["ranks"]) == 2 and other and len(other.get("ranks") or []) <= 1
    for size, vp in SIZES.items():
        page, errors = _open(browser, f"{url}/runs/{rid}", "engine-run", size)  # no sideways scroll
        values = _values_in_view(page, "#config", vp["width"])
        assert len(values) == len(config) and all(v.strip() for v in values)
        _values_in_view(page, "#workload", vp["width"])
        _values_in_view(page, "#environment", vp["width"])
        # two trace sets, each summarized with its ordering line: side by side at 1400 px,
        # one under the other at 390 px
        cards = _boxes(page, "#trace-sets .trace-set")
        assert len(cards) == 2
        if size == "desktop":
            assert abs(cards[0]["y"] - cards[1]["y"]) < 2 and cards[1]["x"] > cards[0]["right"]
        else:
            assert cards[1]["y"] >= cards[0]["y"] + cards[0]["h"]
        card = page.locator("#trace-sets .trace-set")
        assert [(card.nth(i).get_attribute("data-group"), card.nth(i).get_attribute("data-phase"))
                for i in range(2)] == [("0", "decode"), ("1", "prefill")]
        assert card.locator("h3.name").all_inner_texts() == [
            "decode 1764583200123-TP-0-decode.sqlite.gz (+1 ranks)",
            "prefill 1764583200123-TP-0-prefill.sqlite.gz"]
        lines = page.locator("#trace-sets p.ordering").all_inner_texts()
        assert [ln.split(":")[0] for ln in lines] == ["ordering check (moe-routed)"] * 2
        # the joined order is ok, the unjoined one a hazard (data/h200/engines/README.md), each
        # the verdict and reason its stored summary holds
        assert re.search(r"\): ok\b", lines[0]) and re.search(r"\): hazard\b", lines[1]), lines
        assert [ln.split(" · ")[-1] for ln in lines] == [
            own["ordering"]["reason"], other["ordering"]["reason"]]
        steps = page.locator("#trace-sets .trace-set td.steps").all_inner_texts()
        assert steps == [f"{s['steps']} decode · {s['prefill_steps']} prefill" for s in (own, other)]
        assert steps == ["10 decode · 2 prefill", "5 decode · 1 prefill"]  # 5 and 1 a capture
        # the streams table lists the streams of both ranks of the shown (decode) set, each
        # device named by its rank and local GPU as everywhere else
        devices = page.locator("#streams tr td:first-child").all_inner_texts()
        assert {d.split(":")[0] for d in devices} == {
            f"rank {r} / GPU 0 (NVIDIA H200)" for r in (0, 1)}
        assert len(devices) == len(own["streams"]) > 2
        # every step panel of each timeline is framed on the step: its work fills most of it
        framing = _step_framing(page)
        assert len(framing) == 6 and min(framing) > 0.8, framing  # 3 steps x 2 sets
        assert not errors
    assert not (settings.data_dir / "sets").exists()  # a page view analyzes nothing


def _alerted_history(url: str, app) -> list[dict]:
    """One series of 100 runs with 40-character commits and a 3% step at run 70."""
    from tests.service.test_alerts import history

    runs = history(series=1, runs=100, step_series=0)
    for r in runs:
        r["commit"] = hashlib.sha1(r["commit"].encode()).hexdigest()
    assert httpx.post(f"{url}/api/v1/runs/batch", json={"runs": runs},
                      timeout=120).status_code == 201
    from service.jobs.worker import pending

    for _ in range(1200):
        if pending(app.state.settings, app.state.sessions) == 0:
            break
        time.sleep(0.1)
    return runs


def test_every_page_type_at_both_sizes(seeded, live_server, browser, tmp_path):  # noqa: F811
    url, app = live_server
    runs = _alerted_history(url, app)
    alerts = httpx.get(f"{url}/api/v1/alerts", params={"benchmark": "moe-decode-30"}).json()
    assert alerts["count"] == 1
    alert = alerts["alerts"][0]
    assert len(alert["commit"]) == 40 and len(alert["good_commit"]) == 40
    rid = engine_run(url, app, tmp_path, "moe-decode-noise")
    noise = httpx.get(f"{url}/api/v1/runs", params={"benchmark": "moe-decode-noise",
                                                    "limit": 100}).json()["data"]
    sid = next(r["series_id"] for r in noise if r["label"].startswith("aa-"))
    in_series = {r["id"] for r in noise if r["series_id"] == sid}
    assert len({r["series_id"] for r in noise}) > 1
    late = httpx.get(f"{url}/api/v1/runs", params={"label": "pr-late", "limit": 100}).json()["data"]
    ids = ",".join(str(r["id"]) for r in late)
    pages = {"index": "/", "alerts": "/alerts", "benchmark": "/benchmarks/moe-decode",
             "series": f"/benchmarks/moe-decode-noise?series={sid}",
             "matrix": "/benchmarks/moe-decode/matrix",
             "compare": f"/compare?benchmark=moe-decode-ab&baseline=v17&run_ids={ids}"
                        "&vary=shared_experts",
             "run": f"/runs/{rid}", "experiment": "/experiments/plant1"}
    for size, vp in SIZES.items():
        shown = {}
        for name, path in pages.items():
            shown[name] = _open(browser, url + path, f"fit-{name}", size)  # asserts the width
            assert not shown[name][1], (name, size, shown[name][1])
        page = shown["alerts"][0]
        shas = page.locator(f"#alert-{alert['id']} code.sha")
        assert shas.all_inner_texts() == [alert["good_commit"][:12], alert["commit"][:12]]
        assert [shas.nth(i).get_attribute("title") for i in range(2)] == [
            alert["good_commit"], alert["commit"]]
        # each short sha on one line
        rects = page.evaluate(f"""() => Array.from(document.querySelectorAll(
            '#alert-{alert['id']} code.sha')).map(e => e.getClientRects().length)""")
        assert rects == [1, 1]

        page = shown["series"][0]
        legend = page.locator("#history .legendtext").all_text_contents()
        name = httpx.get(f"{url}/api/v1/runs/{min(in_series)}").json()["config"]
        assert legend and not any(f"M={name['batch_size']}" in t or "graphs" in t
                                  for t in legend), legend
        assert len(legend) == len(set(legend))
        assert "baseline band (mean ± 2 sd)" in legend
        band = page.evaluate("""() => {
            const el = document.getElementById('history');
            const i = el._fullData.findIndex(t => t.fill === 'toself');
            const path = el.querySelectorAll('.scatterlayer .trace')[i].querySelector('path.js-fill');
            const r = path.getBoundingClientRect();
            return {h: r.height, w: r.width, fill: getComputedStyle(path).fill,
                    opacity: +getComputedStyle(path).fillOpacity}; }""")
        assert band["h"] >= 4 and band["w"] >= 100 and band["opacity"] > 0.1, band
        recent = [int(t) for t in page.locator("#recent tr td:first-child").all_inner_texts()]
        assert recent and set(recent) <= in_series, (recent, in_series)

        page = shown["matrix"][0]
        col = [t.strip() for t in page.locator("#cells td.vs-baseline").all_inner_texts()]
        assert col and not any(t == "baseline" for t in col)
        assert all(re.fullmatch(r"[+-]\d+\.\d+%( \(in baseline\))?|—", t) for t in col), col
        assert any("%" in t for t in col)

        page = shown["run"][0]
        _values_in_view(page, "#config", vp["width"])
        assert page.locator("#trace-sets .trace-set").count() == 2
    assert runs
