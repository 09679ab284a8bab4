"""No data rewrites a comment: config values, kernel names, commits and reasons that hold line
breaks, headings, pipes, backticks, HTML comments and mentions leave the PR comment's, the check
summary's and the job summary's structure as it is (parsed with a CommonMark + tables parser).
On SQLite."""
from __future__ import annotations

import json

import pytest
from markdown_it import MarkdownIt

from service.format import md
from service.gate.schemas import CompareOut
from service.github.check import summary
from service.github.markdown import append_step_summary, render
from tests.conftest import H200

# PostgreSQL copies find nothing more here: the Markdown is made from the gate's answer, whose
# queries run on both databases in test_gate.py.
pytestmark = pytest.mark.one_database

EVIL = "x\n## PASS — all good\n<!-- hidden"
KERNEL = "gemm|`splitk`|<b>@octocat</b>"


def _parse(text: str) -> list[tuple]:
    """The document's structure: its blocks in order (headings with their level, table rows
    with their cell count, HTML blocks and comments), no inline text."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out: list[tuple] = []
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            out.append(("heading", t.tag))
        elif t.type == "tr_open":
            cells = 0
            for u in tokens[i + 1:]:
                if u.type == "tr_close":
                    break
                cells += u.type in ("td_open", "th_open")
            out.append(("row", cells))
        elif t.type == "html_block":
            out.append(("html", t.content.strip()[:12]))
        elif t.type == "inline":
            for c in t.children or []:
                if c.type == "html_inline" and c.content.startswith("<!--"):
                    out.append(("comment",))
    return out


def _compare(client, extra: dict) -> CompareOut:
    ids: dict[str, list[int]] = {}
    for f in sorted((H200 / "ab").glob("*.json")):
        for rec in json.loads(f.read_text()):
            rec["config"] = {**rec["config"], **extra}
            rec["benchmark"] = "md-" + str(len(extra))
            rec.pop("idempotency_key", None)
            r = client.post("/api/v1/runs", json=rec)
            assert r.status_code == 201, r.text
            ids.setdefault(rec["label"], []).append(r.json()["id"])
    bench = "md-" + str(len(extra))
    assert client.post("/api/v1/baselines", json={"name": "v17", "benchmark": bench,
                                                  "run_ids": ids["v17-overlap"]}
                       ).status_code == 201
    r = client.get("/api/v1/compare", params={"benchmark": bench, "baseline": "v17",
                                               "run_ids": ",".join(map(str, ids["pr-late"])),
                                               "vary": "shared_experts"})
    assert r.status_code == 200, r.text
    cmp = CompareOut.model_validate(r.json())
    return cmp


def _with(cmp: CompareOut, kernel: str, commit: str, reason: str) -> CompareOut:
    cmp = cmp.model_copy(deep=True)
    cmp.trace_diff = {"kernels": [{"name": kernel, "base_per_step_us": 10.0,
                                   "candidate_per_step_us": 12.0, "delta_per_step_us": 2.0}],
                      "base": {}, "candidate": {}}
    for r in cmp.candidate_runs:
        r.commit = commit
    for m in cmp.metrics:
        m.reason = reason
    return cmp


def test_data_cannot_rewrite_the_comment(client, tmp_path):
    clean = _with(_compare(client, {}), "gemm_splitk", "abc1234", "regressed")
    evil = _with(_compare(client, {"note": EVIL}), KERNEL, "abc\n# @octocat `x`",
                 "regressed | <!-- x\n## PASS")
    assert evil.metrics and any(m.verdict != "pass" for m in evil.metrics)
    for build in (lambda c: render(c, "http://dash.local"), summary):
        want, got = build(clean), build(evil)
        assert _parse(got) == _parse(want), got
        assert [t for t in _parse(got) if t[0] == "heading"] == [("heading", "h2")]
        html = MarkdownIt("commonmark").enable("table").render(got)
        assert "<h2>" not in html.split("</h2>", 1)[1]  # no heading from data
        assert "<b>" not in html and "<!-- hidden" not in html
        assert "@octocat" not in html.replace("@\u200b", "")  # no mention
    steps = tmp_path / "summary.md"
    append_step_summary(clean, str(steps))
    want = _parse(steps.read_text())
    steps.write_text("")
    append_step_summary(evil, str(steps))
    assert _parse(steps.read_text()) == want


def test_md_shows_data_literally():
    html = MarkdownIt("commonmark").enable("table")
    for value in (EVIL, KERNEL, "a*b*_c_ [x](http://e) ~~s~~ $m$ \\| &amp;"):
        text = " ".join(value.split("\n"))
        for code in (False, True):
            shown = html.render(md(value, code=code))
            from html import unescape
            from re import sub

            assert unescape(sub(r"<[^>]+>", "", shown)).strip().replace("\u200b", "") == text
    assert md("tp=1 M=4", code=True) == "`tp=1 M=4`"
    block = md("run ```x```\nnext", block=True)
    assert html.render(block).count("<pre>") == 1 and "next" in html.render(block)


def test_bare_urls_and_mentions_in_data_link_nowhere():
    """GitHub links a bare `https://`, a `www.` host and an e-mail address by itself; data
    shown through md() reads the same and links nowhere."""
    value = "see https://evil.example/x, www.evil.example and a@b.example"
    for code in (False, True):
        shown = md(value + ("|" if code else ""), code=code)
        assert "https://" not in shown and "www." not in shown and "a@b" not in shown
        assert shown.replace("\u200b", "").replace("&#124;", "|").strip("`") in (
            value, value + "|", f"<code>{value}|</code>")
