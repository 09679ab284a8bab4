"""Run records (spec/api.md): build them, check them, write them, post them; and THE client of
the server's API (`call`, `post_records`, `stage_trace`, ...), which every command that asks the
server uses.

Standard library only: this runs on GPU nodes whose images hold little beyond PyTorch.
"""
from __future__ import annotations

import contextvars
import hashlib
import json
import math
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from json import dumps as _dumps
from json import loads as _loads
from pathlib import Path

from .errors import CliError, Unreachable, for_status
from .metrics import HIGHER, lookup
from .verdicts import pending_note


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


KEY_FIELDS = ("benchmark", "config", "hardware", "started_at")


def idempotency_key(record: dict) -> str:
    """A key derived from the record's content (benchmark, config, hardware, start time and
    samples), so posting the same file twice stores nothing twice (spec/api.md)."""
    content = {k: record.get(k) for k in KEY_FIELDS}
    if record.get("bisect"):  # a bisect's run is another run than the same record outside it
        content["bisect"] = record["bisect"]
    content["samples"] = {n: m.get("samples") for n, m in sorted((record.get("metrics") or {}).items())}
    blob = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str).encode()
    return "pw1-" + hashlib.sha256(blob).hexdigest()[:40]


def with_key(record: dict) -> dict:
    """The record with its content-derived idempotency key (an existing key is kept)."""
    if not record.get("idempotency_key"):
        record["idempotency_key"] = idempotency_key(record)
    return record


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


def write_records(records: list[dict], out: str | os.PathLike) -> Path | None:
    """Write the records as a JSON list (atomically); `-` is standard output. Trace files named
    by absolute paths are copied into `traces/` beside the record file and named relative to it,
    so the folder can be copied anywhere and ingested there."""
    if str(out) == "-":
        json.dump(records, sys.stdout, indent=1)
        print()
        return None
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = path.parent / "traces"
    for rec in records:
        rel = [_copy_beside(f, folder, path.parent) for f in rec.get("trace_files") or []]
        if rel:
            rec["trace_files"] = rel
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(records, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)
    return path


def _copy_beside(f: str, folder: Path, base: Path) -> str:
    """Copy an absolutely named file into `folder`; a different file of the same name already
    there (another run's trace) keeps its name and this one gets its content hash added."""
    src = Path(f)
    if not src.is_absolute():
        return f
    if src.resolve().is_relative_to(base.resolve()):  # already in the record's folder
        return str(src.resolve().relative_to(base.resolve()))
    folder.mkdir(exist_ok=True)
    dst = folder / src.name
    if dst.exists() and src.resolve() != dst.resolve() and _file_hash(dst) != _file_hash(src):
        dst = folder / f"{src.name.split('.')[0]}-{_file_hash(src)[:10]}{''.join(src.suffixes)}"
    if src.resolve() != dst.resolve():
        shutil.copyfile(src, dst)
    return str(dst.relative_to(base))


def _file_hash(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


TRACE_SUFFIXES = (".sqlite", ".nsys-rep", ".json", ".json.gz", ".sqlite.gz", ".gz")


def check_trace(path: Path) -> None:
    """Refuse, in one line, a trace file that is missing, unreadable or plainly not a trace
    (spec/api.md, Runs and traces land together), before its run is posted: a gzip file is read to
    its end
    (its checksum), a JSON trace must open with an object, a SQLite export with its header."""
    import gzip
    import zlib

    name = str(path)
    if not path.is_file():
        raise ValueError(f"trace file {name} not found (trace_files are relative to the record "
                         "file)")
    if not path.name.endswith(TRACE_SUFFIXES):
        raise ValueError(f"trace file {name}: not a trace ({', '.join(TRACE_SUFFIXES[:4])})")
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                head = f.read(1 << 16)
                while f.read(1 << 20):
                    pass
        else:
            with open(path, "rb") as f:
                head = f.read(1 << 16)
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"trace file {name}: unreadable ({e})") from None
    if not head:
        raise ValueError(f"trace file {name}: empty")
    stem = path.name[:-3] if path.name.endswith(".gz") else path.name
    if stem.endswith(".json") and head.lstrip()[:1] not in (b"{", b"["):
        raise ValueError(f"trace file {name}: not a JSON trace")
    if stem.endswith(".sqlite") and not head.startswith(b"SQLite format 3\x00"):
        raise ValueError(f"trace file {name}: not a SQLite database")


# `ingest --allow-outside-traces`: a record file may name trace files outside its folder
OUTSIDE_TRACES: contextvars.ContextVar[bool] = contextvars.ContextVar("outside_traces",
                                                                      default=False)


def resolve_trace_files(record: dict, base: Path, outside: bool | None = None) -> list[Path]:
    """The record's trace set as paths: relative names are relative to the record file's
    folder `base`. A name that leads outside that folder (an absolute path elsewhere, `..`, a
    link out) is refused with ValueError unless `outside` (default: OUTSIDE_TRACES) allows it:
    a record file must not make the collector upload any local file."""
    allow = OUTSIDE_TRACES.get() if outside is None else outside
    paths = [p if p.is_absolute() else base / p for p in map(Path, record.get("trace_files") or [])]
    if not allow:
        root = base.resolve()
        for p in paths:
            if not p.resolve().is_relative_to(root):
                raise ValueError(f"trace file {p} is outside the record's folder {root} "
                                 "(give --allow-outside-traces to upload it)")
    return paths


def _send(server: str, req: urllib.request.Request, refused: str, token: str | None,
          timeout: float, missing_ok: bool = False) -> bytes:
    """Send a request (with the token of PERFWARDEN_TOKEN); the answer's body, or RuntimeError
    naming what the server refused (`refused`) with its message."""
    token = token or os.environ.get("PERFWARDEN_TOKEN")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read()
    except urllib.error.HTTPError as e:
        if missing_ok and e.code == 404:
            return b""
        raise for_status(f"server refused {refused} ({e.code}): {_message(e)}", e.code) from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:  # exit 69
        raise Unreachable(f"cannot reach {server}: {getattr(e, 'reason', e)}") from None


def _json_request(server: str, path: str, body: object, method: str = "POST"
                  ) -> urllib.request.Request:
    return urllib.request.Request(server.rstrip("/") + path, data=json.dumps(body).encode(),
                                  method=method, headers={"Content-Type": "application/json"})


def post_records(server: str, records: list[dict], token: str | None = None,
                 timeout: float = 300, traces: list[list[dict]] | None = None) -> list[int]:
    """POST all records as one batch (all or nothing); returns their ids in order. `traces`:
    per record, the staged trace files ({filename, sha256}) stored with it in one transaction."""
    body: dict = {"runs": records}
    if traces is not None:
        body["traces"] = traces
    req = _json_request(server, "/api/v1/runs/batch", body)
    return [int(i) for i in json.loads(_send(server, req, "the runs", token, timeout))["ids"]]


def post_json(server: str, path: str, body: dict, token: str | None = None,
              timeout: float = 300) -> dict:
    """POST a JSON body to the server (the gate, ...); its JSON answer."""
    return json.loads(_send(server, _json_request(server, path, body), f"POST {path}", token,
                            timeout))


def call(server: str, method: str, path: str, json: object = None, params: dict | None = None,
         timeout: float = 60) -> dict:
    """One request to `server` (PERFWARDEN_TOKEN as its bearer token); its JSON answer ({} for
    204), or CliError with the server's one-line message: Unreachable (69) when it cannot be
    reached or answers 5xx, Refused (65 for an invalid or unknown input) for 4xx."""
    query = urllib.parse.urlencode(params or {}, doseq=True)
    url = server.rstrip("/") + path + (f"?{query}" if query else "")
    req = urllib.request.Request(url, method=method, data=None if json is None else
                                 _dumps(json).encode(),
                                 headers={"Content-Type": "application/json"} if json is not None
                                 else {})
    token = os.environ.get("PERFWARDEN_TOKEN")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:  # exit 69
        raise Unreachable(f"cannot reach {server}: {getattr(e, 'reason', e)}") from None
    if status == 204:
        return {}
    try:
        body = _loads(raw)
    except ValueError:
        if status >= 500:
            raise Unreachable(f"{server} answered {status}") from None
        raise CliError(f"{server} answered {status} without JSON") from None
    if status >= 400:
        msg = body.get("error", {}).get("message") if isinstance(body, dict) else None
        raise for_status(f"{server} answered {status}: {msg or body}", status)
    return body


def pending_evidence(server: str, run_ids: list[int], ask: Callable[..., dict] = call
                     ) -> str | None:
    """`profiler evidence pending: ...` when a trace of the candidate runs is not analyzed yet
    on `server` (its evidence is not in the verdict's tables), else None."""
    return pending_note({rid: sum(t.get("state") == "pending" for t in
                                  ask(server, "GET", f"/api/v1/runs/{rid}").get("traces") or [])
                         for rid in run_ids})


def get_json(server: str, path: str, token: str | None = None, timeout: float = 60) -> dict:
    """GET a JSON answer from the server (a run and its traces' states, ...)."""
    req = urllib.request.Request(server.rstrip("/") + path, method="GET")
    return json.loads(_send(server, req, f"GET {path}", token, timeout))


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


def _stream(server: str, path_and_query: str, path: Path, token: str | None,
            timeout: float) -> dict:
    """POST the file's bytes as they are read (never the whole file in memory), with upload
    progress on stderr; the server's JSON answer."""
    size = path.stat().st_size
    with open(path, "rb") as raw:
        req = urllib.request.Request(server.rstrip("/") + path_and_query,
                                     data=_ProgressReader(raw, size, path.name), method="POST",
                                     headers={"Content-Type": "application/octet-stream",
                                              "Content-Length": str(size)})
        return json.loads(_send(server, req, "the trace", token, timeout))


def stage_trace(server: str, path: Path, token: str | None = None, timeout: float = 600) -> dict:
    """Stream a trace file to the service before its run is posted; the answer names it by
    `sha256` for the batch that stores the run with it."""
    return _stream(server, f"/api/v1/traces/stage?filename={urllib.parse.quote(path.name)}",
                   path, token, timeout)


def post_trace(server: str, run_id: int, path: Path, token: str | None = None,
               timeout: float = 600, set_size: int = 1) -> dict:
    """Stream a trace file to the service for a stored run. `set_size`: how many files the
    run's trace set has (the ranks of a TP run), summarized together once all are there."""
    return _stream(server, f"/api/v1/runs/{run_id}/traces?filename="
                   f"{urllib.parse.quote(path.name)}&set_size={set_size}", path, token, timeout)


def _message(e: urllib.error.HTTPError) -> str:
    try:
        return json.loads(e.read()).get("error", {}).get("message", "")
    except Exception:  # noqa: BLE001 - any unreadable error body
        return e.reason or ""
