"""The speed bench's floors (msgspec's decode of the needed fields alone; the C filter's pass
alone) run on this tree's decoders: each counts every event of one file, and of several files
spread over processes."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.trace_speed import FILTER_SNIPPET, FLOOR_SNIPPET

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "data" / "kineto_1layer_M8.json.gz"


@pytest.mark.parametrize("snippet", [FLOOR_SNIPPET, FILTER_SNIPPET], ids=["msgspec", "filter"])
def test_the_floor_counts_every_event_of_one_file_and_of_a_set(tmp_path, snippet):
    text = gzip.decompress(SRC.read_bytes())
    n = len(json.loads(text)["traceEvents"])
    files = []
    for r in range(3):
        f = tmp_path / f"rank{r}.json"
        f.write_bytes(text)
        files.append(str(f))
    for given, want in ((files[:1], n), (files, 3 * n)):
        p = subprocess.run([sys.executable, "-c", snippet, *given], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert int(p.stdout) == want
