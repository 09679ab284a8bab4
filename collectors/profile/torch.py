"""The PyTorch-profiler pass: CPU and CUDA activity with CUDA sync events, one gzipped Kineto
trace per rank."""
from __future__ import annotations

import gzip
import shutil
from collections.abc import Callable
from pathlib import Path


def sync_events_config():
    """The profiler config that records CUDA sync events (`cuda_sync` `Stream Wait Event`): the
    stream waits the ordering check needs (spec/metrics.md, Stream waits in Kineto traces). None
    where this
    PyTorch lacks the option (the trace then shows observed overlap only)."""
    import torch

    try:
        return torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
    except (AttributeError, TypeError):
        return None


def torch_trace(device: str, marker, steps: Callable[[], None], out: Path) -> None:  # noqa: ANN001
    """Run `steps` under the PyTorch profiler, `marker`'s ranges also as record_function
    ranges, and write the Kineto trace gzipped to `out` (a .json.gz path)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    marker.record_function = True
    try:
        with profile(activities=acts, experimental_config=sync_events_config()) as prof:
            steps()
    finally:
        marker.record_function = False
    raw = out.with_suffix("")  # .json
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
