"""How `collect decode` starts its TP ranks: forked on the CPU from a process of one thread (each
rank starts with torch imported), spawned otherwise; both decode the same tokens."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent("""
    import json, tempfile, threading
    from collectors.bench import decode
    from collectors.bench.config import DecodeConfig

    def cfg(**kw):
        base = dict(device="cpu", tp=2, batch_sizes=[2], trials=2, steps=3, warmup=1, shape={},
                    quiet=True, workdir=tempfile.mkdtemp())
        return DecodeConfig(**{**base, **kw})

    if __name__ == "__main__":
        out = {"cpu": decode.start_method(cfg()),
               "cuda": decode.start_method(cfg(device="cuda")),
               "nsys": decode.start_method(cfg(profile="nsys"))}
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        out["another thread"] = decode.start_method(cfg())
        stop.set()
        t.join()
        out["digests"] = {}
        for method in ("fork", "spawn"):
            decode.start_method = lambda c, m=method: m
            (rec,) = decode.run(cfg())
            out["digests"][method] = rec["determinism"]["digests"]
        print(json.dumps(out))
""")


def test_cpu_ranks_fork_from_one_thread_and_decode_as_spawned_ones(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["cpu"] == "fork"
    assert out["cuda"] == out["nsys"] == out["another thread"] == "spawn"
    fork, spawn = out["digests"]["fork"], out["digests"]["spawn"]
    assert len(fork) == 2 and fork == spawn  # the same tokens, bit for bit
