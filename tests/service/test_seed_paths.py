"""`perfwarden seed DIR` reads only inside DIR: a record naming a trace by an absolute path, a
`..`, or a link that leads out of the folder is refused with one line, and no run is stored
(nor the folder's records before it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, count_rows, minimal_run

TRACE = DATA / "kineto_1layer_M8.json.gz"
PERFWARDEN = str(Path(sys.executable).parent / "perfwarden")


def _seed(folder: Path, url: str, data: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFWARDEN_")}
    env.update(PERFWARDEN_DATABASE_URL=url, PERFWARDEN_DATA_DIR=str(data))
    return subprocess.run([PERFWARDEN, "seed", str(folder)], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.one_database  # refused while reading the folder, before the database is opened
@pytest.mark.parametrize("name", ["/etc/passwd", "../outside/t.json.gz", "traces/link.json.gz"])
def test_a_trace_outside_the_seed_folder_is_refused(settings, tmp_path, name):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t.json.gz").write_bytes(TRACE.read_bytes())
    folder = tmp_path / "seed"
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "link.json.gz").symlink_to(outside / "t.json.gz")
    # the bad record second: the first, valid, is not stored either
    (folder / "runs.json").write_text(json.dumps([minimal_run(label="fine"),
                                                  {**minimal_run(), "trace_files": [name]}]))
    r = _seed(folder, settings.database_url, tmp_path / "data")
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "seeded folder" in lines[0], r.stderr
    assert count_rows(settings.database_url, "runs") == 0
    assert not (tmp_path / "data" / "traces").exists() or not any(
        (tmp_path / "data" / "traces").rglob("*"))


def test_a_trace_inside_the_seed_folder_is_attached(settings, tmp_path):
    folder = tmp_path / "seed"
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "t.json.gz").write_bytes(TRACE.read_bytes())
    (folder / "runs.json").write_text(json.dumps([{**minimal_run(),
                                                   "trace_files": ["traces/t.json.gz"]}]))
    r = _seed(folder, settings.database_url, tmp_path / "data")
    assert r.returncode == 0, r.stderr
    assert count_rows(settings.database_url, "runs") == 1
    assert count_rows(settings.database_url, "traces") == 1
