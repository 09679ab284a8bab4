"""The project speaks of itself only: no tracked file outside data/ and tests/data/ names how it
was made (the words the PATTERN below lists), and states its rules instead.
Words that mean something else here are let through: a database session, `manual_seed`, the
`seed` data loader and its `--seed DIR` flag, and the GitHub issue an alert opens."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PATTERN = (r"helper session|other sessions|this session|a session|round[ -]?[0-9]|this round"
           r"|issue ?#?[0-9]+|the issue|done-when|item [0-9]+|the seed|seed.s|v1\.[12] item"
           r"|\.md v[0-9]|DESIGN\.md")  # rules are cited by title, in files that are here
# what the pattern also matches in ordinary words of the code
ALLOWED = [
    r"\bas session\b", r"lambda session\b", r"\bA session on the configured database",
    r"manual_seed", r"\bseed\(", r"--seed DIR", r"\bseeded\b",
    r"The issue holding `marker`",
]


def hits() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "grep", "-n", "-i", "-E", PATTERN, "--", ":!data", ":!tests/data",
         ":!tests/test_words.py"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    found = []
    for line in out.stdout.splitlines():
        path, _, text = line.partition(":")
        rest = text.split(":", 1)[1] if ":" in text else text
        for allowed in ALLOWED:
            rest = re.sub(allowed, "", rest, flags=re.I)
        if re.search(PATTERN, rest, re.I):
            found.append(line)
    return found


def test_no_words_about_how_the_project_was_built():
    assert hits() == []


def test_the_filter_still_catches_build_words():
    text = "the seed's question (spec/api.md v1.2 item 6), this round, DESIGN.md rule 7"
    for allowed in ALLOWED:
        text = re.sub(allowed, "", text, flags=re.I)
    assert re.findall(PATTERN, text, re.I) == ["the seed", ".md v1", "item 6", "this round",
                                           "DESIGN.md"]
