"""Run records (spec/api.md): build them, check them, write them, post them.

Standard library only: this runs on GPU nodes whose images hold little beyond PyTorch.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .metrics import HIGHER, lookup


def metric(name: str, samples: list[float], unit: str | None = None,
           direction: str | None = None) -> dict:
    """A record's metric entry; unit and direction come from the registry (collectors/metrics.py)
    for known metrics, and must be given for unknown ones."""
    known = lookup(name)
    if known is None and direction is None:
        raise ValueError(f"metric {name!r} is not in the registry: give its direction")
    return {"unit": unit or (known.unit if known else ""),
            "direction": direction or (known.direction if known else HIGHER),
            "samples": [float(s) if not float(s).is_integer() or name != "kv_capacity_tokens"
                        else int(s) for s in samples]}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def determinism(digests: list[str]) -> dict:
    return {"repeats": len(digests),
            "identical": sum(1 for d in digests if digests and d == digests[0]),
            "digests": digests}


def check(record: dict) -> None:
    """The collector's own sanity check before writing (the service validates fully)."""
    if not record.get("benchmark"):
        raise ValueError("run record: benchmark is missing")
    metrics = record.get("metrics") or {}
    if not metrics:
        raise ValueError("run record: metrics is empty")
    for name, m in metrics.items():
        samples = m.get("samples") or []
        if not samples or not all(isinstance(s, (int, float)) and math.isfinite(s) for s in samples):
            raise ValueError(f"run record: metrics.{name}.samples needs finite numbers")


def write_records(records: list[dict], out: str | os.PathLike) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(records, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)
    return path


def post_record(server: str, record: dict, token: str | None = None, timeout: float = 60) -> int:
    """POST one run record; returns the run id. Raises RuntimeError with the server's message."""
    body = json.dumps(record).encode()
    req = urllib.request.Request(server.rstrip("/") + "/api/v1/runs", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    token = token or os.environ.get("PERFWARDEN_TOKEN")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return int(json.loads(r.read())["id"])
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"server refused the run ({e.code}): {_message(e)}") from None
    except urllib.error.URLError as e:
        raise RuntimeError(f"cannot reach {server}: {e.reason}") from None


class _ProgressReader:
    """A file wrapper that reports upload progress on stderr every few seconds."""

    def __init__(self, f, size: int, label: str, every_s: float = 2.0):
        self.f, self.size, self.label, self.every_s = f, size, label, every_s
        self.sent = 0
        self.last = time.monotonic()

    def read(self, n: int = -1) -> bytes:
        chunk = self.f.read(n if n and n > 0 else 1 << 20)
        self.sent += len(chunk)
        now = time.monotonic()
        if now - self.last >= self.every_s or (not chunk and self.size > 64 << 20):
            self.last = now
            print(f"uploading {self.label}: {self.sent / 1e6:,.0f}/{self.size / 1e6:,.0f} MB",
                  file=sys.stderr, flush=True)
        return chunk


def post_trace(server: str, run_id: int, path: Path, token: str | None = None,
               timeout: float = 600) -> dict:
    """Stream a trace file to the service (the file is not read into memory)."""
    size = path.stat().st_size
    url = f"{server.rstrip('/')}/api/v1/runs/{run_id}/traces?filename={urllib.parse.quote(path.name)}"
    with open(path, "rb") as raw:
        f = _ProgressReader(raw, size, path.name)
        req = urllib.request.Request(url, data=f, method="POST",
                                     headers={"Content-Type": "application/octet-stream",
                                              "Content-Length": str(size)})
        token = token or os.environ.get("PERFWARDEN_TOKEN")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"server refused the trace ({e.code}): {_message(e)}") from None
        except urllib.error.URLError as e:
            raise RuntimeError(f"cannot reach {server}: {e.reason}") from None


def _message(e: urllib.error.HTTPError) -> str:
    try:
        return json.loads(e.read()).get("error", {}).get("message", "")
    except Exception:  # noqa: BLE001 - any unreadable error body
        return e.reason or ""
