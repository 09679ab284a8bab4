"""Journey: a new user runs `perfwarden serve --seed data/h200` and asks the dashboard "are we
slower than v17?", at 1400 and 390 px in real Chromium. Home answers it (the PR's label against
baseline v17, its series matched on the shared-expert order it changes: FAIL, M=1 -0.59%) and
links the experiments and the matrix explanations; the benchmark's page says the same verdict, its
verdict link opens /compare with the same verdict, a run of it opens its run page; the matrix explanation is one click from home, with the
explaining kernels, and a traced cell's run page shows the aux-gap figures and that kernel. The
commands the matrix pages show are run as written against the page's own server and exit 0 with
the decision the page shows (a GPU node's `collect decode --device cuda`, which this machine
cannot run, is parsed by the real parser as written); `perfwarden gate` gives the same verdict as the pages."""
from __future__ import annotations

import html
import re
import shlex
import time
import urllib.request

import pytest

from service.cli import full_parser
from tests.conftest import ARTIFACTS, H200, screenshot
from tests.dashboards.test_browser import SIZES, _open, browser  # noqa: F401

from .conftest import _serve
from .shell import PERFWARDEN, run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def seeded_server(tmp_path_factory):
    yield from _serve(tmp_path_factory.mktemp("story"), "--seed", str(H200))


def _matrix_ready(url: str, name: str, timeout_s: float = 600) -> None:
    """Wait for the stored explanation the server's own jobs compute after seeding."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/benchmarks/{name}/matrix", timeout=60) as r:
            if 'id="decision"' in r.read().decode():
                return
        time.sleep(2)
    raise AssertionError(f"no stored explanation of {name} in {timeout_s} s")


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("size", list(SIZES))
def test_home_answers_the_v17_question_and_every_page_agrees(seeded_server, browser,  # noqa: F811
                                                             size):
    url = seeded_server.url
    _matrix_ready(url, "moe-decode")
    home, errors = _open(browser, url + "/", "story-home", size)
    row = home.locator("#benchmarks tr[data-benchmark='moe-decode-ab']")
    said = _words(row.locator("td.verdicts").inner_text())
    assert "label pr-late (12 runs) vs baseline v17, varying shared_experts" in said
    assert "FAIL" in said
    m1 = row.locator("ul.series-verdicts li", has_text="M=1")
    assert _words(m1.inner_text()).startswith("regression M=1 -0.59% (-0.62..-0.56%)")
    assert _words(row.locator("ul.series-verdicts li", has_text="M=8").inner_text()) \
        .startswith("pass M=8 -0.12%")
    # the decisions are linked: each experiment with its verdict, each matrix explanation
    exp = home.locator("#benchmarks tr[data-benchmark='moe-decode-experiment'] ul.decisions li")
    assert {_words(exp.nth(i).inner_text()) for i in range(exp.count())} == {
        "experiment decide-plant1 fail", "experiment decide-late-vs-overlap pass",
        "experiment plant1 fail"}
    assert not errors

    # click 1: the benchmark -> its page says the same verdict
    with home.expect_navigation():
        row.locator("a", has_text="moe-decode-ab").first.click()
    story = home.locator("#story")
    assert "FAIL" in story.inner_text()
    assert _words(story.locator("ul.series-verdicts li", has_text="M=1").inner_text()) \
        .startswith("regression M=1 -0.59% (-0.62..-0.56%)")
    assert home.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    # click 2: the verdict -> /compare says the same
    with home.expect_navigation():
        story.locator("a.overall").click()
    assert home.locator("#verdict").inner_text() == "FAIL"
    gate = _words(home.locator("#gate").inner_text())
    assert re.search(r"tok_s M=1 .* -0\.59% -0\.62\.\.-0\.56% .* regression", gate)
    assert home.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    screenshot(home, ARTIFACTS / f"story-compare-{size}.png", full_page=True)
    # click 3: a candidate run -> its run page
    with home.expect_navigation():
        home.locator("#runs a[href='/runs/1']").click()
    assert _words(home.locator("h1").inner_text()) == "Run 1 · moe-decode-ab"
    assert "shared_experts late" in _words(home.locator("#config").inner_text())

    # the CLI's gate answers as the pages do (exit 1: a regression)
    out = run([PERFWARDEN, "gate", "--server", url, "--benchmark", "moe-decode-ab",
               "--baseline", "v17", *[a for i in range(1, 13) for a in ("--run", str(i))],
               "--vary", "shared_experts"])
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL" in out.stdout and "-0.59%" in out.stdout

    # the matrix explanation, one click from home, with the explaining kernel
    page, errors = _open(browser, url + "/", "story-home-again", size)
    with page.expect_navigation():
        page.locator("#benchmarks tr[data-benchmark='moe-decode'] ul.decisions a",
                     has_text="matrix").click()
    decision = _words(page.locator("#decision").inner_text())
    assert decision.startswith("non-identical repeats follow batch_size")
    assert "gatherTopK" in page.locator("#explain-kernels").inner_text()
    det = page.locator("#cells tr[data-deterministic='on']")
    assert det.count() == 5 and "deterministic" in det.first.inner_text()
    screenshot(page, ARTIFACTS / f"story-matrix-{size}.png", full_page=True)
    # click 2: a traced M=8 cell's run -> the aux-gap figures and the kernel
    cell = page.locator("#cells tr", has=page.locator("a.badge.traced")).filter(
        has_text="tp1 overlap eager").filter(has=page.locator("td[data-label='M']", has_text="8"))
    with page.expect_navigation():
        cell.locator("a.badge.traced").click()
    assert page.locator("#summary").count() == 1
    assert "aux idle gaps" in page.locator("#summary").inner_text()
    assert "gatherTopK" in page.locator("#kernels").inner_text()
    assert not errors


def test_every_command_on_the_matrix_pages_runs_as_written(seeded_server):
    url = seeded_server.url
    _matrix_ready(url, "moe-decode")
    with urllib.request.urlopen(url + "/", timeout=60) as r:
        names = sorted(set(re.findall(r'href="/benchmarks/([^"/?]+)/matrix"', r.read().decode())))
    assert "moe-decode" in names and "moe-decode-ab" in names
    ran = 0
    for name in names:
        with urllib.request.urlopen(f"{url}/benchmarks/{name}/matrix", timeout=60) as r:
            page = r.read().decode()
        decision = re.search(r'<p id="decision">(.*?)</p>', page, re.S)
        for code in re.findall(r"<code[^>]*>(perfwarden [^<]*)</code>", page):
            argv = shlex.split(html.unescape(code))
            assert argv[0] == "perfwarden" and argv[argv.index("--server") + 1] == url, code
            if "cuda" in argv:  # a GPU node's command: this machine has none; the real
                full_parser().parse_args(argv[1:])  # parser takes it as written
                continue
            out = run([PERFWARDEN, *argv[1:]])
            assert out.returncode == 0, f"{code}: {out.stdout}{out.stderr}"
            if argv[1] == "explain" and decision:
                first = html.unescape(decision.group(1)).split("; ")[0]
                assert first in " ".join(out.stdout.split()), (first, out.stdout)
            ran += 1
    assert ran >= len(names)  # every matrix page with an explanation runs its explain command
