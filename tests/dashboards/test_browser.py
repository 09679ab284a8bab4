"""The dashboard in real headless Chromium (Debian's package), seeded with the committed H200 runs."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import ARTIFACTS, H200, screenshot

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def seeded_once(tmp_path_factory, migrated):
    """The committed H200 runs seeded into a SQLite database, their durable jobs (trace
    analyses, alert evaluations, summaries) run: once per test run, under a lock, for every
    module and every worker of the run; each test starts from a copy of it."""
    import fcntl

    from service.config import Settings
    from service.db import make_engine, session_factory
    from service.jobs.worker import drain
    from service.seed import seed

    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this run's, shared
    folder = run / "h200-seeded"
    with open(run / "h200-seeded.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker seeds, the others wait for it
        if not (folder / "complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            url = f"sqlite:///{folder / 'perfwarden.db'}"
            migrated(url)
            settings = Settings(database_url=url, data_dir=folder / "data",
                                bind_host="127.0.0.1")
            # 68 + the A/B processes (24), the two experiments (36), the shared-expert PR's
            # matrix (24), the explain matrix made twice (32), the two decisions in GPU time (22)
            assert seed(settings, H200) == 220
            engine = make_engine(url)
            drain(settings, session_factory(engine), timeout_s=300)
            engine.dispose()
            (folder / "complete").touch()
    return folder


@pytest.fixture
def seeded(settings, request):
    if settings.database_url.startswith("postgresql"):
        pytest.skip("the browser suite runs once, on SQLite")
    folder = request.getfixturevalue("seeded_once")
    db = Path(settings.database_url.removeprefix("sqlite:///"))
    for f in folder.glob("perfwarden.db*"):  # the database with its -wal and -shm files
        shutil.copyfile(f, db.with_name(f.name))
    shutil.copytree(folder / "data", settings.data_dir, dirs_exist_ok=True)
    return settings


@pytest.fixture
def browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed")
        pytest.skip("chromium not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


SIZES = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}


def _open(browser, url, name, size="desktop"):
    page = browser.new_page(viewport=SIZES[size])
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    resp = page.goto(url)
    assert resp.status == 200, url
    page.wait_for_load_state("networkidle")
    screenshot(page, ARTIFACTS / f"{name}-{size}.png", full_page=True)
    screenshot(page, ARTIFACTS / f"{name}-{size}-view.png")  # what the first screen shows
    # no chart has a mode bar over its title; the page never scrolls sideways (wide tables
    # scroll inside their own box)
    assert page.locator(".modebar").count() == 0, url
    wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 1, f"{url} at {size}: {wide} px wider than the window"
    return page, errors


def test_pages_render_with_charts(seeded, live_server, browser):
    url, app = live_server
    page, errors = _open(browser, url + "/", "index")
    rows = page.locator("#benchmarks > tbody > tr").count()
    # header + moe-decode, -noise, -ab, -experiment, -matrix, -resident, -resident-experiment,
    # -explain
    assert rows == 9
    assert not errors
    # the main benchmark: per-series verdicts against its baseline; one baseline run per series
    # and fewer than 5 history runs: spec/api.md, Few baseline runs makes each inconclusive, never a
    # t-test on trials
    main = page.locator("#benchmarks tr[data-benchmark='moe-decode'] td.verdicts")
    verdicts = main.locator("ul.series-verdicts > li > a")
    assert verdicts.count() == 5
    assert {verdicts.nth(i).inner_text() for i in range(5)} == {"inconclusive"}

    page, errors = _open(browser, url + "/benchmarks/moe-decode-noise", "benchmark-panels")
    assert page.locator("#panels .panel-card").count() == 2  # one panel per series
    assert page.locator("#panels .panel-card .chart[data-rendered='1'] .main-svg").count() >= 2
    assert not errors
    sid = page.locator("#panels .panel-card").first.get_attribute("data-series")
    page, errors = _open(browser, f"{url}/benchmarks/moe-decode-noise?series={sid}", "benchmark")
    assert page.locator("#history[data-rendered='1'] .main-svg").count() >= 1
    assert page.locator("#history .scatterlayer .trace").count() >= 2  # means + trials
    assert "H100" not in page.locator("#history").inner_text()
    assert not errors

    page, errors = _open(browser, url + "/benchmarks/moe-decode/matrix", "matrix")
    assert page.locator("#matrix .heatmaplayer").count() == 1
    text = page.locator("#cells").inner_text()
    for m in ("1", "4", "7", "8"):
        assert f"\t{m}\t" in text
    assert "5/5 identical" in text and "1/5 identical" in text  # M=1 stable, M=8 not
    assert not errors

    page, errors = _open(browser, url + "/experiments/plant1", "experiment")
    assert page.locator("#verdict").inner_text() == "FAIL"
    assert page.locator("#arms .scatterlayer .trace").count() == 2  # both arms over block order
    assert "order AB BA BA AB BA AB" in page.locator("p.muted").first.inner_text()
    assert "-1.36%" in page.locator("#gate").inner_text()
    assert not errors

    page, errors = _open(browser, url + "/benchmarks/moe-decode-matrix/matrix", "matrix-attribution")
    found = page.locator("#attribution").inner_text()
    assert "non-identical repeats follow batch_size" in found and "shared_experts explains" in found
    assert page.locator("#cells tr").count() == 25  # 6 variants x 4 batch sizes
    assert not errors


def test_thirty_series_with_a_planted_step(seeded, live_server, browser):
    """The dashboard at scale: 30 series x 100 runs, a 3% step planted in one;
    its own panel marks it, an alert lists it; every page at desktop and phone size."""
    import httpx

    from tests.service.test_alerts import STEP_SERIES, history

    url, app = live_server
    runs = history()
    for k in range(0, len(runs), 500):
        assert httpx.post(f"{url}/api/v1/runs/batch", json={"runs": runs[k:k + 500]},
                          timeout=120).status_code == 201
    # alerts, then the pages' stored summaries, are durable jobs after the response: the
    # server's in-process worker runs them; wait until its queue is empty
    import time

    from service.jobs.worker import pending

    for _ in range(1200):
        if pending(app.state.settings, app.state.sessions) == 0:
            break
        time.sleep(0.1)
    alerts = httpx.get(f"{url}/api/v1/alerts", params={"benchmark": "moe-decode-30"}).json()
    assert alerts["count"] == 1
    for size in SIZES:
        page, errors = _open(browser, f"{url}/benchmarks/moe-decode-30", "benchmark-30", size)
        cards = page.locator("#panels .panel-card")
        assert cards.count() == 30
        flagged = page.locator("#panels .panel-card.alerted")
        assert flagged.count() == 1
        assert f"M={STEP_SERIES + 1} " in flagged.locator("h3").inner_text() + " "
        assert flagged.get_attribute("data-changes") == "1"
        assert "step -2." in flagged.inner_text() or "step -3." in flagged.inner_text()
        # the change point is drawn in that panel: a dashed line and the alert's red triangle
        assert flagged.locator(".shapelayer path").count() >= 1
        assert flagged.locator(".scatterlayer .trace").count() >= 3
        assert page.locator("#panels .panel-card[data-changes='0']").count() == 29
        assert not errors
        page, errors = _open(browser, f"{url}/benchmarks/moe-decode-30?x=commit", "benchmark-30-commit",
                             size)
        assert page.locator("#panels .panel-card.alerted").count() == 1 and not errors
        page, errors = _open(browser, f"{url}/alerts", "alerts", size)
        assert page.locator("#alerts tr.alert-row").count() == 1
        row = page.locator("#alerts tr.alert-row").inner_text()
        assert "moe-decode-30" in row and "open" in row and "0000070abcde" in row
        assert page.locator("#alerts tr.alert-row code.sha[title='0000070abcdef']").count() == 1
        assert not errors
        page, errors = _open(browser, f"{url}/", "index", size)
        assert "1 open" in page.locator("#benchmarks tr[data-benchmark='moe-decode-30']").inner_text()
        assert not errors
        for path, name in (("/benchmarks/moe-decode/matrix", "matrix"),
                           ("/experiments/plant1", "experiment"),
                           ("/benchmarks/moe-decode-matrix/matrix", "matrix-attribution")):
            page, errors = _open(browser, url + path, name, size)
            assert not errors


def test_compare_and_run_pages(seeded, live_server, browser):
    url, app = live_server
    import httpx

    runs = httpx.get(f"{url}/api/v1/runs", params={"label": "plant3-b2", "limit": 10}).json()["data"]
    graphs = next(r["id"] for r in runs if r["config"]["cuda_graphs"])
    page, errors = _open(browser, f"{url}/compare?benchmark=moe-decode-noise&baseline=v1&run_ids={graphs}",
                         "compare")
    assert page.locator("#verdict").inner_text() == "FAIL"
    assert "regression" in page.locator("#gate").inner_text()
    assert page.locator(".dist .boxlayer").count() >= 1
    assert not errors

    # the shared-expert PR's question: the PR's `late` order against v17 (`overlap`), varied on
    # purpose
    late = httpx.get(f"{url}/api/v1/runs", params={"label": "pr-late", "limit": 100}).json()["data"]
    ids = ",".join(str(r["id"]) for r in late if r["config"]["batch_size"] == 1)
    page, errors = _open(browser, f"{url}/compare?benchmark=moe-decode-ab&baseline=v17&run_ids={ids}"
                         "&vary=shared_experts", "compare-vary")
    table = page.locator("#gate").inner_text()
    assert page.locator("#verdict").inner_text() == "FAIL"
    assert "shared_experts=overlap→late" in table and "regression" in table
    assert "-0.59%" in table and "worse-side bound" in table
    assert not errors

    traced = httpx.get(f"{url}/api/v1/runs", params={"label": "tp1-overlap-graphs"}).json()["data"]
    rid = next(r["id"] for r in traced if r["traces"])
    page, errors = _open(browser, f"{url}/runs/{rid}", "run")
    assert page.locator(".timeline .barlayer").count() == 3  # one panel per step shown
    assert "aux idle gap" in page.locator(".timeline").inner_text()
    assert page.locator("#trials tr").count() == 6
    assert "1,980" in page.locator("#trials").inner_text()  # SM clock per trial
    assert page.locator("#kernels tr").count() > 5
    assert not errors
    for path, name in ((f"/compare?benchmark=moe-decode-ab&baseline=v17&run_ids={ids}"
                        "&vary=shared_experts", "compare-vary"), (f"/runs/{rid}", "run")):
        page, errors = _open(browser, url + path, name, "phone")
        assert not errors
    # the reasons fold into a details row under each metric; trace links name side and rank
    page, errors = _open(browser, f"{url}/compare?benchmark=moe-decode-ab&baseline=v17&run_ids={ids}"
                         "&vary=shared_experts", "compare-vary")
    assert page.locator("#gate tr.details details").count() == page.locator("#gate tr.metric-row").count()


def test_filters_are_shareable_urls(seeded, live_server, browser):
    url, _ = live_server
    page, errors = _open(browser, url + "/benchmarks/moe-decode?label=tp1-serial-eager&since=2026-11-01",
                         "filtered")
    assert page.locator("input[name=label]").input_value() == "tp1-serial-eager"
    assert not errors


def test_api_docs_work_offline(settings, live_server, browser):
    """/docs draws every operation from assets the service serves itself: no request leaves
    the machine."""
    if settings.database_url.startswith("postgresql"):
        pytest.skip("the browser suite runs once, on SQLite")
    url, _ = live_server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    outside, errors = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def only_local(route):
        if route.request.url.startswith(url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    assert page.goto(url + "/docs").status == 200
    page.wait_for_selector(".opblock", timeout=15000)
    ops = page.locator(".opblock").count()
    assert ops >= 15  # runs, batch, traces, baselines, gate, compare, noise, ...
    assert "/api/v1/runs/batch" in page.locator("#swagger-ui").inner_text()
    screenshot(page, ARTIFACTS / "docs.png")
    assert outside == [] and errors == []


def _boxes(page, selector):
    return page.evaluate("""sel => Array.from(document.querySelectorAll(sel)).map(e => {
        const r = e.getBoundingClientRect();
        return {x: r.left, right: r.right, y: r.top, w: r.width, h: r.height,
                text: e.innerText, visible: getComputedStyle(e).display !== 'none'
                && getComputedStyle(e).visibility !== 'hidden'};
    })""", selector)


def _verdict_table_reads_at(page, size):
    """A header row holds the shared keys; each row only the keys that differ; an evidence row
    under each verdict; at phone width no cell is hidden or cut off."""
    common = page.locator("#gate tr.common")
    assert common.count() == 1
    shared = [t for t in common.inner_text().replace("every row:", "").split() if "=" in t]
    assert shared
    rows = page.locator("#gate tr.metric-row")
    assert rows.count() >= 2
    series = [t.strip() for t in page.locator("#gate tr.metric-row td.series").all_inner_texts()]
    for s in series:
        assert not any(k in s.split() for k in shared), (s, shared)
        assert "NVIDIA" not in s and "dtype=" not in s
    # the evidence row closes each series' verdicts
    assert page.locator("#gate tr.evidence").count() == len(set(series)) >= 2
    width = SIZES[size]["width"]
    cells = _boxes(page, "#gate tr.metric-row td")
    per_row = len(cells) // rows.count()
    assert per_row >= 8  # metric, series, both means, change, CI, bound, threshold, verdict
    for c in cells:
        assert c["visible"] and c["w"] > 20 and c["h"] > 0, c
        assert c["x"] >= 0 and c["right"] <= width + 0.5, (size, c)
    scroll = page.evaluate("(() => { const e = document.querySelector('#gate').parentElement;"
                           " return e.scrollWidth - e.clientWidth; })()")
    assert scroll <= 1, f"the verdict table scrolls {scroll} px sideways at {size}"


def test_pages_read_at_a_glance(seeded, live_server, browser):
    """Pages read at a glance: /compare (shared keys once, evidence under each verdict, every
    column at 390 px), the benchmark page (two panels a row at 1400 px, one at 390, a legend)
    and the run page (the planted slowdown), at both sizes, saved to test-artifacts/."""
    import httpx

    url, _ = live_server

    def one(label, **kw):
        data = httpx.get(f"{url}/api/v1/runs", params={"label": label, "limit": 100}).json()["data"]
        return [r for r in data if all(r["config"].get(k) == v for k, v in kw.items())]

    base = next(r for r in one("tp1-overlap-eager", batch_size=1) if r["traces"])
    cand = next(r for r in one("tp1-late-eager", batch_size=1) if r["traces"])
    late = ",".join(str(r["id"]) for r in one("pr-late"))
    planted = one("plant3-b2", cuda_graphs=True)[0]
    for size in SIZES:
        page, errors = _open(browser, f"{url}/compare?benchmark=moe-decode-ab&baseline=v17&"
                             f"run_ids={late}&vary=shared_experts", "compare", size)
        _verdict_table_reads_at(page, size)
        assert "shared_experts=overlap→late" in page.locator("#gate tr.common").inner_text()
        assert not errors
        page, errors = _open(browser, f"{url}/compare?benchmark=moe-decode&baseline=runs:"
                             f"{base['id']}&run_ids={cand['id']}&vary=shared_experts",
                             "compare-evidence", size)
        ev = page.locator("#gate tr.evidence").first.inner_text()
        assert "aux idle gap" in ev and "step GPU time" in ev and "us/step" in ev, ev
        assert not errors

        page, errors = _open(browser, f"{url}/benchmarks/moe-decode", "benchmark", size)
        shared = page.locator("#panels-common").inner_text().replace("every panel:", "").split()
        assert "dtype=bfloat16" in shared and "experts=16" in shared
        for title in page.locator("#panels .panel-card h3").all_inner_texts():
            assert not any(k in title.split() for k in shared if "=" in k), title
        legend = page.locator("#panel-legend").inner_text()
        assert "mean ± 2 sd" in legend and "change point" in legend and "alert" in legend
        boxes = _boxes(page, "#panels .panel-card .chart")
        assert len(boxes) >= 3
        if size == "desktop":
            assert boxes[0]["w"] >= 560 and boxes[0]["h"] >= 250, boxes[0]
            assert abs(boxes[0]["y"] - boxes[1]["y"]) < 2 and boxes[2]["y"] > boxes[0]["y"] + 200
        else:
            assert boxes[0]["w"] >= 300 and boxes[0]["h"] >= 250, boxes[0]
            assert boxes[1]["y"] > boxes[0]["y"] + 200  # one panel a row
        # runs sit evenly along x, half a step of margin at each end: no dead space
        margins = page.evaluate("""() => Array.from(document.querySelectorAll(
            '#panels .panel-card .chart')).map(c => {
            const xs = c._fullData[0].x, ax = c._fullLayout.xaxis;
            return [ax.type, xs[0] - ax.range[0], ax.range[1] - xs[xs.length - 1]];
        })""")
        for kind, left, right in margins:
            assert kind == "linear" and left <= 0.51 and right <= 0.51, margins
        assert page.locator("#recent code:empty").count() == 0  # no grey box for a missing commit
        assert not errors

        page, errors = _open(browser, f"{url}/runs/{planted['id']}", "run", size)
        workload = page.locator("#workload").inner_text()
        assert "plant.pct" in workload and "plant.plant_us" in workload
        metrics = page.locator("#metrics").inner_text()
        assert ".000" not in metrics
        assert not errors
    page, _ = _open(browser, f"{url}/", "index")
    ab = page.locator("#benchmarks tr[data-benchmark='moe-decode-ab']").inner_text()
    assert "no run after the baseline's" not in ab
    assert "12 other runs in other series or branches" in ab  # the PR's `late` runs
