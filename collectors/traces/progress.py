"""Progress lines on stderr for long work, with no progress library needed (GPU images lack one)."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Rate-limited progress: a rewritten line on a terminal, a line every few seconds elsewhere.

    `Progress(None)` is silent. `Progress(sys.stderr)` reports.
    """

    def __init__(self, stream: TextIO | None = sys.stderr, min_interval_s: float | None = None):
        self.stream = stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.min_interval_s = min_interval_s if min_interval_s is not None else (
            0.2 if self.tty else 2.0)
        self.total = 0
        self.done_count = 0
        self.label = ""
        self._t0 = self._last = time.monotonic()

    def start(self, total: int, label: str) -> None:
        self.total, self.done_count, self.label = total, 0, label
        self._t0 = self._last = time.monotonic()

    def advance(self, n: int, what: str = "") -> None:
        self.done_count += n
        now = time.monotonic()
        if self.stream is None or now - self._last < self.min_interval_s:
            return
        self._last = now
        pct = f" ({100 * self.done_count / self.total:.0f}%)" if self.total else ""
        self._write(f"{self.label}: {self.done_count:,}{'/' + format(self.total, ',') if self.total else ''}"
                    f" {what}{pct}")

    def note(self, text: str) -> None:
        if self.stream is not None:
            self._write(text, final=True)

    def done(self, text: str | None = None) -> None:
        if self.stream is None:
            return
        elapsed = time.monotonic() - self._t0
        if text is None:
            if elapsed < self.min_interval_s and not self.tty:
                return
            text = f"{self.label}: {self.done_count:,} rows in {elapsed:.1f} s"
        self._write(text, final=True)

    def _write(self, text: str, final: bool = False) -> None:
        assert self.stream is not None
        if self.tty:
            self.stream.write("\r\x1b[K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
