"""The house limits (docs/layout.md): no module over 400 lines and no function over 60 lines in
service/, collectors/ and dashboards/, except where docs/layout.md says why. The
Its list must name only what is really over a limit, so it cannot go stale."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_MAX, FUNCTION_MAX = 400, 60
HEADING = "Longer than the house limits"


def oversize() -> set[str]:
    out = set()
    for folder in ("service", "collectors", "dashboards"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            rel = str(p.relative_to(ROOT))
            text = p.read_text()
            if len(text.splitlines()) > MODULE_MAX:
                out.add(rel)
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        node.end_lineno is not None and \
                        node.end_lineno - node.lineno + 1 > FUNCTION_MAX:
                    out.add(f"{rel}:{node.name}")
    return out


def explained() -> set[str]:
    """The `path` or `path:function` entries of docs/layout.md's list, each with its reason."""
    text = (ROOT / "docs" / "layout.md").read_text()
    assert HEADING in text, f"docs/layout.md has no '{HEADING}' paragraph"
    block = text.split(HEADING, 1)[1].split("\n\n", 1)[0]  # the paragraph and its list
    return set(re.findall(r"^- `([^`]+)`: \S", block, re.M))


def test_no_module_or_function_over_the_limits_unless_readme_says_why():
    assert sorted(oversize() - explained()) == []


def test_readme_lists_only_what_is_over_a_limit():
    assert sorted(explained() - oversize()) == []
