"""A loaded trace kept on disk as its columns, so the ranks of a set are parsed once each.

The service analyzes each uploaded rank as it arrives, then the whole set once its last rank is
in. The set's analysis reads the ranks' columns from here (numpy's .npz, no pickles) rather than
parsing every trace file again: for 8 Kineto ranks that is most of its time. A file's columns are
keyed by its name, size, modification time, the step ranges kept and this format's version, so a
changed file, filter or model is parsed afresh."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zipfile
from collections import Counter
from dataclasses import fields
from pathlib import Path

import numpy as np

from .model import Calls, Ops, Ranges, StreamWait, Trace

VERSION = 1  # raised whenever model.Trace changes shape
_OPS = tuple(f.name for f in fields(Ops))  # the model's own columns: a new one is kept too
_CALLS = tuple(f.name for f in fields(Calls))
_RANGES = tuple(f.name for f in fields(Ranges) if f.name != "names")


def key_path(folder: Path, path: Path, keep: str | None) -> Path:
    """Where `path`'s columns, loaded with the step filter `keep`, are kept in `folder`."""
    st = path.stat()
    tag = f"{VERSION}\0{keep}\0{st.st_size}\0{st.st_mtime_ns}".encode()
    return folder / f"{path.name}.{hashlib.sha256(tag).hexdigest()[:16]}.npz"


def save(trace: Trace, dest: Path) -> None:
    """Write the columns atomically (a reader never sees half a file)."""
    arrays: dict[str, np.ndarray] = {}
    arrays.update({f"ops_{f}": getattr(trace.ops, f) for f in _OPS})
    arrays.update({f"calls_{f}": getattr(trace.calls, f) for f in _CALLS})
    arrays.update({f"ranges_{f}": getattr(trace.ranges, f) for f in _RANGES})
    meta = {"names": trace.names, "range_names": trace.ranges.names,
            "device_labels": [[k, v] for k, v in trace.device_labels.items()],
            "source": trace.source, "producer": trace.producer,
            "waits": [[w.device, w.stream, w.on_stream, w.proc, w.call_ns, w.record_call_ns,
                       w.corr] for w in trace.waits],
            "has_sync_records": trace.has_sync_records, "warnings": trace.warnings,
            "graph_trace_rows": trace.graph_trace_rows,
            "range_name_counts": list(trace.range_name_counts.items())}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".columns-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read(src: Path) -> Trace | None:
    """The trace saved at `src`; None where there is none (or it cannot be read)."""
    try:
        with np.load(src, allow_pickle=False) as z:
            cols = {k: z[k] for k in z.files}
        meta = json.loads(cols.pop("meta").tobytes())
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    try:
        return _trace(cols, meta)
    except (KeyError, TypeError, ValueError):  # saved by a model this one does not match
        return None


def _trace(cols: dict[str, np.ndarray], meta: dict) -> Trace:
    ranges = Ranges(**{f: cols[f"ranges_{f}"] for f in _RANGES},
                    names=list(meta["range_names"]))
    return Trace(ops=Ops(**{f: cols[f"ops_{f}"] for f in _OPS}),
                 calls=Calls(**{f: cols[f"calls_{f}"] for f in _CALLS}), ranges=ranges,
                 names=list(meta["names"]),
                 device_labels={int(k): v for k, v in meta["device_labels"]},
                 source=meta["source"], producer=meta["producer"],
                 waits=[StreamWait(*w) for w in meta["waits"]],
                 has_sync_records=bool(meta["has_sync_records"]), warnings=list(meta["warnings"]),
                 graph_trace_rows=int(meta["graph_trace_rows"]),
                 range_name_counts=Counter(dict(meta["range_name_counts"])))
