"""What the journeys share: the user's shell (perfwarden on PATH, no CI variables) and a
served perfwarden."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
PERFWARDEN = str(BIN / "perfwarden")


@dataclass
class Served:
    url: str
    db: str

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return json.loads(r.read())

    def runs(self, **params) -> list[dict]:
        q = "&".join(f"{k}={v}" for k, v in {"limit": 1000, **params}.items())
        return self.get(f"/api/v1/runs?{q}")["data"]


def env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell with perfwarden installed: no CI variables that would
    name another commit, no token."""
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "PERFWARDEN_"))}
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    out.update(extra)
    return out




def run(args: list[str], cwd: Path | str | None = None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env(**extra), capture_output=True, text=True,
                          timeout=600)
