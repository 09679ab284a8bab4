"""The nsys profile pass runs the parent's very config (one batch size, profile-pass mode): no
option is dropped on the way, `--deterministic` included."""
from __future__ import annotations

import dataclasses
import json
import os
import stat

import pytest

from collectors.bench.decode import DecodeConfig, _nsys_pass, config_from_file


def test_profile_pass_gets_the_whole_config(tmp_path, monkeypatch):
    seen = tmp_path / "seen.json"
    fake = tmp_path / "nsys"
    # a stand-in for nsys: `profile` keeps the inner command's config and writes a report,
    # `export` fails (the test is about the command the pass runs, not about nsys)
    fake.write_text(f"""#!/bin/sh
if [ "$1" = profile ]; then
  out=""; cfg=""; prev=""
  for a in "$@"; do
    [ "$prev" = "-o" ] && out="$a"
    [ "$prev" = "--from-config" ] && cfg="$a"
    prev="$a"
  done
  cp "$cfg" {seen}
  : > "$out.nsys-rep"
  exit 0
fi
echo "export not available here" >&2
exit 1
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NSYS", str(fake))
    cfg = DecodeConfig(device="cpu", tp=2, batch_sizes=[1, 4, 8], trials=3, order="late",
                       deterministic=True, extra_work=2, seed=7, profile="nsys",
                       profile_batch_sizes=[1, 8], shape={"layers": 2}, workdir=str(tmp_path),
                       label="pr-150", quiet=True)
    with pytest.raises(RuntimeError, match="nsys export failed"):
        _nsys_pass(cfg, 8)
    inner = config_from_file(seen)
    assert inner.deterministic and inner.order == "late" and inner.extra_work == 2
    assert inner.batch_sizes == [8] and inner.profile_batch_sizes == [8] and inner.nsys_pass
    assert inner.workdir == os.path.join(str(tmp_path), "nsys-pass")
    same = {f.name for f in dataclasses.fields(DecodeConfig)} - {
        "batch_sizes", "profile_batch_sizes", "nsys_pass", "quiet", "workdir"}
    assert {k: getattr(inner, k) for k in same} == {k: getattr(cfg, k) for k in same}
    assert json.loads(seen.read_text())["tp"] == 2
