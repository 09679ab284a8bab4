"""The dashboard in real headless Chromium (Debian's package), seeded with the committed H200 runs."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import ARTIFACTS, H200

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.browser


@pytest.fixture
def seeded(settings):
    if settings.database_url.startswith("postgresql"):
        pytest.skip("the browser suite runs once, on SQLite")
    from service.seed import seed

    # 68 + the A/B processes (24), the two experiments (36) and the seed's matrix (24)
    assert seed(settings, H200) == 166
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


def _open(browser, url, name):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    resp = page.goto(url)
    assert resp.status == 200, url
    page.wait_for_load_state("networkidle")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    return page, errors


def test_pages_render_with_charts(seeded, live_server, browser):
    url, app = live_server
    page, errors = _open(browser, url + "/", "index")
    rows = page.locator("#benchmarks tr").count()
    assert rows == 6  # header + moe-decode, -noise, -ab, -experiment, -matrix
    assert page.locator("#benchmarks").inner_text().count("moe-decode") == 5
    assert not errors

    page, errors = _open(browser, url + "/benchmarks/moe-decode-noise", "benchmark")
    assert page.locator("#history[data-rendered='1'] .main-svg").count() >= 1
    assert page.locator("#history .scatterlayer .trace").count() >= 4  # means + trials, 2 series
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

    # the seed's question: the PR's `late` order against v17 (`overlap`), varied on purpose
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
    assert page.locator(".timeline .barlayer").count() == 1
    assert "aux idle gap" in page.locator(".timeline").inner_text()
    assert page.locator("#trials tr").count() == 6
    assert "1980" in page.locator("#trials").inner_text()  # SM clock per trial
    assert page.locator("#kernels tr").count() > 5
    assert not errors


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
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "docs.png"))
    assert outside == [] and errors == []
