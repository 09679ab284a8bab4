"""Dashboard pages as HTML (no browser): error pages, the run page's workload, the experiment's
interval level, the index's reason for a missing verdict, the shared config said once."""
from __future__ import annotations

import json
import re

from service.format import level_pct
from tests.conftest import H200, h200_records


def _noise(client):
    ids: dict[str, list[int]] = {}
    for r in h200_records("noise", "graphs"):
        ids.setdefault(r["label"].split("-")[0], []).append(
            client.post("/api/v1/runs", json=r).json()["id"])
    assert client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                                  "run_ids": ids["aa"][:4]}).status_code == 201
    return ids


def _text(html: str) -> str:
    import html as h

    return h.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_dashboard_errors_are_pages_with_the_api_message(client):
    api = client.get("/api/v1/runs/999999")
    page = client.get("/runs/999999")
    assert api.status_code == page.status_code == 404
    assert api.headers["content-type"].startswith("application/json")
    assert page.headers["content-type"].startswith("text/html")
    assert api.json()["error"]["message"] in page.text and "<h1>404" in page.text
    bad = client.get("/compare", params={"benchmark": "nope", "baseline": "v1", "run_ids": "x"})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("text/html")
    assert "run_ids" in _text(bad.text)
    assert client.get("/benchmarks/nope?since=yesterday").headers["content-type"].startswith(
        "text/html")
    # the API keeps its JSON shape
    assert client.get("/api/v1/compare", params={"benchmark": "nope", "baseline": "v1",
                                                 "run_ids": "x"}).json()["error"]["status"] == 422


def test_run_page_shows_the_planted_slowdown_and_whole_numbers(client):
    ids = _noise(client)
    html = client.get(f"/runs/{ids['plant3'][0]}").text
    workload = html[html.index('id="workload"'):html.index("</table>", html.index('id="workload"'))]
    text = _text(workload)
    plant = client.get(f"/api/v1/runs/{ids['plant3'][0]}").json()["plant"]
    assert "plant.pct 3 " in text and f"plant.plant_us {plant['plant_us']:.3f}" in text
    assert f"plant.plant_cycles {plant['plant_cycles']:,} " in text
    assert "extra_work" not in text  # null in the record
    assert "kv_cache.bytes_available 133,397,250,048" in text and "kv_cache.derived on" in text
    config = _text(html[html.index('id="config"'):html.index("</table>", html.index('id="config"'))])
    for k in ("tp 1", "cuda_graphs on", "dtype bfloat16", "experts 16", "steps 256"):
        assert k in config
    metrics = _text(html[html.index('id="metrics"'):])
    assert re.search(r"kv_capacity_tokens tokens higher 1 [\d,]+ [\d,]+ — ", metrics), metrics[:300]
    assert not re.search(r"\d\.000\b", metrics)  # whole numbers never carry .000
    # a run without a planted change says so
    assert "No planted slowdown or extra work" in client.get(f"/runs/{ids['aa'][0]}").text


def test_compare_says_the_shared_keys_once_with_evidence_rows(client):
    ids = _noise(client)
    html = client.get("/compare", params={"benchmark": "moe-decode-noise", "baseline": "v1",
                                          "run_ids": str(ids["plant3"][0])}).text
    table = html[html.index('id="gate"'):html.index("</table>", html.index('id="gate"'))]
    common = _text(re.search(r'<tr class="common">.*?</tr>', table, re.S).group(0))
    assert "tp=1" in common and "dtype=bfloat16" in common and "1x NVIDIA H200" in common
    rows = re.findall(r'<tr class="metric-row">.*?</tr>', table, re.S)
    assert rows and all("dtype=" not in r and "NVIDIA" not in r for r in rows)
    assert len(re.findall(r'<tr class="evidence">', table)) == 1  # one series: one evidence row
    assert "16,283,844 tokens" in _text(table) and "16,283,844.00" not in table


def test_experiment_page_names_its_interval_level(client):
    recs = json.loads((H200 / "experiment" / "plant1.json").read_text())
    assert client.post("/api/v1/runs/batch", json={"runs": recs}).status_code == 201
    html = client.get("/experiments/plant1").text
    verdict = client.get("/api/v1/experiments/plant1").json()["verdict"]
    looks = verdict["looks"]
    level = _text(re.search(r'<span id="level">.*?</span>', html).group(0)).strip()
    want = level_pct(verdict["alpha"] / looks)  # the printed level follows alpha / looks
    if looks > 1:
        assert level == f"{want} (alpha {verdict['alpha']:g}/{looks} looks)"
    else:
        assert level == want
    assert f"CI at {level}" in _text(html)
    # the page says why, as the API does: the cause of a verdict that did not pass
    assert verdict["verdict"] != "pass" and verdict["cause"]["line"]
    assert f"Cause: {verdict['cause']['line']}" in _text(html)


def test_index_says_why_a_benchmark_has_no_verdict(client):
    ids = _noise(client)
    # a newer run on a branch that is not the default: the baseline's series has no newer
    # default-branch run, and the page says that rather than "no run after the baseline's"
    rec = dict(h200_records("noise", "graphs")[0], branch="fix/x", label="pr-x",
               started_at="2026-12-01T00:00:00Z")
    rec.pop("commit", None)
    assert client.post("/api/v1/runs", json=rec).status_code == 201
    for i in ids["aa"][4:] + ids["plant3"] + ids.get("plant1", []):
        assert client.delete(f"/api/v1/runs/{i}").status_code == 200
    row = re.search(r'<tr data-benchmark="moe-decode-noise">.*?</tr>', client.get("/").text, re.S)
    text = _text(row.group(0))
    assert "no run after the baseline's" not in text
    assert "no newer main run in the baseline's series; 1 other run in other series" in text


WARM = r"""
import json, sys
from pathlib import Path
import plotly.io as pio
from fastapi.testclient import TestClient
from service.config import Settings
from service.main import create_app
from dashboards.routes import templates
app = create_app(Settings(database_url=sys.argv[1], data_dir=Path(sys.argv[2])))
before = [type(pio.templates._templates.get("plotly_white")).__name__, len(templates.env.cache)]
with TestClient(app):
    after = [type(pio.templates._templates.get("plotly_white")).__name__, len(templates.env.cache),
             "_plotly_utils.colors" in sys.modules]
print(json.dumps([before, after]))
"""


def test_start_up_pays_for_what_a_first_page_view_would(settings, tmp_path):
    """A fresh process's start-up compiles the page templates and draws plotly's first figures
    (its template, each trace type's validators, the named color scales), so the first page
    view after a restart costs what the next ones do."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", WARM, settings.database_url, str(tmp_path / "d")],
                         capture_output=True, text=True, cwd=root, timeout=120, check=True)
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    pages = len(list((root / "dashboards" / "templates").glob("*.html")))
    assert before == ["object", 0]  # nothing loaded when the app is built
    assert after == ["Template", pages, True]


def test_traces_uploaded_one_by_one_are_the_runs_own_set(client, settings):
    """The per-run upload names no group: a decode and a prefill file uploaded so are group 0,
    the run's one set (as the route's set_size says), whatever their names; the run page shows
    that stored set and analyzes nothing itself."""
    from tests.conftest import drain_jobs

    rec = h200_records("noise", "graphs")[0]
    rid = client.post("/api/v1/runs", json=rec).json()["id"]
    names = {"1764583200123-TP-0-decode.sqlite.gz": "nsys-joined-eager.sqlite.gz",
             "1764583200123-TP-0-prefill.sqlite.gz": "nsys-unjoined-eager.sqlite.gz"}
    for name, capture in names.items():
        r = client.post(f"/api/v1/runs/{rid}/traces", params={"filename": name},
                        content=(H200 / "engines" / capture).read_bytes())
        assert r.status_code == 202, r.text
    drain_jobs(client.app)
    run = client.get(f"/api/v1/runs/{rid}").json()
    assert [(t["trace_group"], t["phase"], t["state"]) for t in run["traces"]] == [
        (0, None, "done")] * 2
    assert len(run["trace_summary"]["ranks"]) == 2
    html = client.get(f"/runs/{rid}").text
    assert 'id="trace-sets"' not in html  # one set
    steps = _text(html[html.index('<table id="summary"'):html.index("</table>", html.index(
        '<table id="summary"'))])
    s = run["trace_summary"]
    assert f"{s['steps']} decode · {s['prefill_steps']} prefill" in steps
    assert not (settings.data_dir / "sets").exists()


def test_plotly_is_loaded_by_the_pages_that_draw_charts_only(client):
    """plotly.js is 3-4 MB to fetch and compile: the home, alerts, sign-in and error pages draw
    no chart and do not load it; a benchmark's and an experiment's pages do."""
    ids = _noise(client)
    script = '<script src="/static/plotly.min.js">'
    for path in ("/", "/alerts", "/benchmarks/no-such-benchmark"):
        page = client.get(path)
        assert script not in page.text and "data-figure='" not in page.text, path
    assert "data-figure='" in (page := client.get("/benchmarks/moe-decode-noise")).text
    assert script in page.text
    run = client.get(f"/runs/{ids['aa'][0]}")
    assert run.status_code == 200 and script in run.text
    assert client.get("/static/plotly.min.js").status_code == 200


def test_the_dashboard_is_a_site_the_service_finds_installed(settings, monkeypatch, caplog):
    """The service names no page: the dashboard registers itself (entry point group
    `perfwarden.site`), `create_app` mounts what is installed, and with no site the API stands
    alone (its errors JSON on every path, no page)."""
    from fastapi.testclient import TestClient

    import dashboards.routes
    from service.main import create_app
    from service.site import installed
    from tests.conftest import LOCAL

    assert installed() == [dashboards.routes]
    with TestClient(create_app(settings), **LOCAL) as full:
        assert full.get("/").headers["content-type"].startswith("text/html")
        assert full.get("/benchmarks/nothing-here").headers["content-type"].startswith("text/html")
    with TestClient(create_app(settings, sites=()), **LOCAL) as api:
        assert api.get("/api/v1/health").status_code == 200
        r = api.get("/")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert api.get("/static/plotly.min.js").status_code == 404
    assert "no site installed" not in caplog.text  # asked for none
    monkeypatch.setattr("service.main.installed", lambda: [])  # a tree run without its install
    with TestClient(create_app(settings), **LOCAL) as bare:
        assert bare.get("/").status_code == 404
    assert "no site installed (entry points perfwarden.site): serving the API alone" in caplog.text
