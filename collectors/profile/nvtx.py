"""NVTX marks: named host ranges that nsys records (the `nvtx` package if installed, else
torch.cuda.nvtx on CUDA) and, during a PyTorch-profiler pass, record_function ranges of the
same names, so both kinds of trace name the same steps and phases."""
from __future__ import annotations

import contextlib

import torch


class Marker:
    """NVTX ranges (the `nvtx` package if installed, else torch.cuda.nvtx on CUDA) and, during a
    PyTorch-profiler pass, record_function ranges of the same names."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.record_function = False
        self._nvtx = None
        try:
            import nvtx

            self._nvtx = nvtx
        except ImportError:
            pass

    @contextlib.contextmanager
    def range(self, name: str):
        pushed = False
        if self._nvtx is not None:
            self._nvtx.push_range(name)
            pushed = True
        elif self.cuda:
            torch.cuda.nvtx.range_push(name)
            pushed = True
        ctx = torch.profiler.record_function(name) if self.record_function else contextlib.nullcontext()
        try:
            with ctx:
                yield
        finally:
            if pushed:
                if self._nvtx is not None:
                    self._nvtx.pop_range()
                else:
                    torch.cuda.nvtx.range_pop()
