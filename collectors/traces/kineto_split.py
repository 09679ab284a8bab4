"""A large Kineto document scanned a piece at a time, in one or more forked processes
(spec/metrics.md).

The `traceEvents` array is cut at event boundaries (`}` `,` `{` between two events) into pieces
of about PIECE_BYTES; each piece is made a JSON document of its own by writing its brackets over
the separators around it (the last piece gets `{"traceEvents":[` over the end of the event
before it and keeps the document's tail), decoded where it lies, turned into columns by
`kineto_scan.Columns`, and dropped before the next, so decoded events never pile up; the bytes
written over are put back after each piece. A plain file is mapped copy-on-write and each piece's
pages are released once read, so neither the document nor its events sit in memory whole. The
pieces are shared out in runs of consecutive pieces, one run per process; the runs' columns are
joined in document order, key tables renumbered in order of first appearance, so the result is
the one-call scan's, column for column.

A cut that is not at an event boundary (inside a string, or in a nested array) leaves a piece
that is not valid JSON or does not start with an event; such a piece, a piece the typed decode
refuses, a document head that is not valid JSON, or epoch times send the whole document back to
the one-call scan, which also gives the error messages.
"""
from __future__ import annotations

import functools
import gc
import mmap
import multiprocessing as mp
import os
import re
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from .. import forked
from . import kineto_events as ev
from . import kineto_scan as ks
from . import kineto_times as kt
from .kineto_scan import Columns

SPLIT_MIN_BYTES = 48 << 20  # smaller documents decode in one call (faster; their events are few)
PIECE_BYTES = 8 << 20  # decoded at a time
_WS = rb"[ \t\r\n]*"  # JSON's whitespace (a regex's \s also takes \f and \v, which JSON does not)
_GAP = re.compile(rb"\}" + _WS + rb"," + _WS + rb"\{")  # between two objects of an array
_ARRAY = re.compile(rb'"traceEvents"' + _WS + rb":" + _WS + rb"\[")
_HEAD_LAST = b'{"traceEvents":['
# A second `"traceEvents"` key after the array wins in the one-call decode (JSON objects keep the
# last of two equal keys). Only the last piece is searched for the key's text (searching every
# piece took 0.10-0.13 s of a 255 MB document's 0.75 s here): the piece that holds the first
# array's `]` and whatever follows it is either the last one, or a middle or first one that then
# carries text after its own closing bracket and fails to decode, which refuses the pieces. The
# key's text inside a middle piece lies in a string (a name, an argument): harmless. The key's
# letters may also be written as \u escapes, so a last piece holding any \u escape is refused too.
_KEY = b'"traceEvents"'
_ESCAPE = b"\\u"
_PAGE = mmap.PAGESIZE


def processes(size: int, parts: int | None) -> int:
    """How many processes scan a document of `size` bytes a piece at a time; 0: decode it in
    one call (small documents, or no msgspec). Only a single-threaded process (the command
    line, a rank-set pool worker) forks; a server's threads scan in their own process."""
    if ev.msgspec is None or size < SPLIT_MIN_BYTES:
        return 0
    if "fork" not in mp.get_all_start_methods() or threading.active_count() > 1:
        return 1  # forking beside other threads (a server's) can copy a lock they hold
    return max(1, parts if parts is not None else min(os.cpu_count() or 1, 8))


def open_plain(path: Path) -> mmap.mmap | None:
    """The file mapped copy-on-write (each process writes its pieces' brackets into its own
    private pages); None for an empty file."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)


def bounds(src: Any, pieces: int) -> list[tuple[int, int]] | None:
    """Where the pieces' events lie: (first byte, one past the last), the first from the array's
    `[`, the last to the document's end, each other cut after an event's closing brace and
    before the next event's opening one; None where the document has no event array to cut or
    its head is not valid JSON."""
    n = len(src)
    if pieces < 2 or src[:64].lstrip()[:1] != b"{":
        return None
    arr = _ARRAY.search(src)
    if arr is None:
        return None
    start = arr.end() - 1
    try:  # the keys before the events, with one number for the array: the pieces never read
        head = ev.msgspec.json.decode(bytes(src[:start + 1]) + b"0]}")  # them
    except ev.msgspec.DecodeError:
        return None
    if not isinstance(head, dict) or head.get("traceEvents") != [0]:
        return None  # the match was the tail of another key's name, or a second such key
    gaps: list[tuple[int, int]] = []
    for k in range(1, pieces):
        at = max(start + 1, gaps[-1][1] if gaps else 0, start + (n - start) * k // pieces)
        m = _GAP.search(src, at)
        if m is None:
            break
        gaps.append((m.start() + 1, m.end() - 1))  # after the `}`, at the `{`
    if not gaps or gaps[-1][1] < len(_HEAD_LAST):
        return None
    return list(zip([start] + [b for _, b in gaps], [a for a, _ in gaps] + [n]))


def piece_view(buf: Any, lo: int, hi: int, j: int, m: int) -> tuple[memoryview, list]:
    """Piece j of m as a JSON document written in place into `buf`, and what was written over
    (positions and bytes, for `restore`): the first piece is the array from its `[`, with `]`
    over the separator after it; a middle piece gets `[` and `]` over the separators around it;
    the last gets `{"traceEvents":[` over the end of the event before it."""
    mv = memoryview(buf)
    if j == m - 1:
        at = lo - len(_HEAD_LAST)
        saved = [(at, bytes(mv[at:lo]))]
        mv[at:lo] = _HEAD_LAST
        return mv[at:], saved
    saved = [(hi, bytes(mv[hi:hi + 1]))]
    if j > 0:
        saved.append((lo - 1, bytes(mv[lo - 1:lo])))
        mv[lo - 1:lo] = b"["
    mv[hi:hi + 1] = b"]"
    return mv[lo - (j > 0):hi + 1], saved


def restore(buf: Any, saved: list) -> None:
    mv = memoryview(buf)
    for at, old in reversed(saved):
        mv[at:at + len(old)] = old


def scan(src: Any, rx: re.Pattern | None, procs: int,
         tick: Callable[[int], None] | None = None) -> Columns | None:
    """The document's columns, a piece at a time in `procs` processes (1: this one); None where
    it must be decoded in one call. `src` must be writable (a copy-on-write map or a
    bytearray); it is left as it was. `tick(n)`: n more bytes scanned (progress)."""
    m = max(2 * procs, -(-len(src) // PIECE_BYTES))
    spans = bounds(src, m)
    if spans is None:
        return None
    m = len(spans)
    if tick:
        tick(spans[0][0])  # the head, read by bounds()
    procs = min(procs, m)
    runs = [(k * m // procs, (k + 1) * m // procs) for k in range(procs)]
    if procs == 1:
        return _whole([run(src, spans, 0, m, rx, tick)])
    ctx = mp.get_context("fork")
    running = []
    try:
        for j0, j1 in runs:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_child, args=(src, spans, j0, j1, rx, send, os.getpid()),
                            daemon=True)
            p.start()
            send.close()
            running.append((p, recv))
    except (AssertionError, OSError):  # a daemonic caller may not fork; none left running
        for p, _ in running:
            p.kill()
        return None
    return _whole(_receive(running, tick))


WAIT_S = 600.0  # a process silent this long is stuck: the one-call decode answers instead


def _receive(running: list, tick: Callable[[int], None] | None) -> list:
    """Each process's result, in order; None where one died (out of memory, killed) or fell
    silent for WAIT_S. Byte counts they send on the way are progress."""
    results: list = [None] * len(running)
    waiting = {recv: i for i, (_, recv) in enumerate(running)}
    heard = time.monotonic()
    while waiting and time.monotonic() - heard < WAIT_S:
        ready: list[Any] = wait(list(waiting), timeout=1.0)  # the connections it was given
        for recv in ready:
            i = waiting[recv]
            try:
                got = recv.recv()
            except (EOFError, OSError):  # it ended without a result
                del waiting[recv]
                continue
            heard = time.monotonic()
            if isinstance(got, int):
                if tick:
                    tick(got)
                continue
            results[i] = got
            del waiting[recv]
    for p, recv in running:
        if recv in waiting:
            p.kill()
        recv.close()
        p.join(5)
    return results


def _whole(results: list) -> Columns | None:
    """The runs' columns joined; None where one failed, or where an event with epoch times
    lies among the document's first BATCH events (the one-call decode's test of the times)."""
    if not all(isinstance(r, Columns) for r in results):
        return None
    before = 0
    for r in results:
        if r.epoch_at is not None and before + r.epoch_at < ks.BATCH:
            return None
        before += r.n_events
    return join(results)


def _child(src: Any, spans: list, j0: int, j1: int, rx: re.Pattern | None, out: Any,
           parent: int) -> None:
    """A forked process's work: it dies with `parent` and keeps none of the sockets and pipe
    ends it inherited but `out` (a server's listening socket, its siblings' pipes:
    collectors/forked.py), no garbage collection of the parent's objects (their finalizers
    may want locks another thread held at the fork), and an exit that skips the interpreter's
    clean-up (flushing streams whose locks may be held, freeing what was decoded)."""
    gc.disable()
    try:
        forked.settle(parent, {out.fileno()})
        got = run(src, spans, j0, j1, rx, out.send)
        if isinstance(got, Columns):
            got.shed()
        out.send(got)
        out.close()
    finally:
        os._exit(0)


def run(src: Any, spans: list, j0: int, j1: int, rx: re.Pattern | None,
        tick: Callable[[int], None] | None = None) -> Columns | str:
    """Pieces j0..j1-1 of the document, one after the other, as columns; or a string saying why
    the document must be decoded in one call. A mapped file's pages are released as they are
    passed; `tick(n)` after each piece of n bytes."""
    m = len(spans)
    cols = Columns(False, rx)
    release = isinstance(src, mmap.mmap)
    freed = spans[j0][0] // _PAGE * _PAGE
    for j in range(j0, j1):
        lo, hi = spans[j]
        view, saved = piece_view(src, lo, hi, j, m)
        try:  # a piece's own bytes are not written over (only the separators around them)
            why = _piece(cols, view, j, m, functools.partial(_second_key, src, lo, hi))
        except (OverflowError, ValueError, TypeError) as e:  # a value no column holds: the
            why = f"piece {j}: {type(e).__name__}"  # one-call decode names it
        finally:
            del view
            restore(src, saved)
        if why:
            return why
        if j0 == 0 and cols.epoch_at is not None:  # within the document's first BATCH events
            return "epoch times"
        if tick:  # with the separator after it
            tick((spans[j + 1][0] if j + 1 < m else len(src)) - lo)
        upto = hi // _PAGE * _PAGE  # the page holding the next piece's start stays
        if release and upto > freed:
            src.madvise(mmap.MADV_DONTNEED, freed, upto - freed)
            freed = upto
    return cols


def _second_key(src: Any, lo: int, hi: int) -> bool:
    return src.find(_KEY, lo, hi) >= 0 or src.find(_ESCAPE, lo, hi) >= 0


def _piece(cols: Columns, view: memoryview, j: int, m: int,
           second_key: Callable[[], bool]) -> str | None:
    """Piece j's events into `cols`; or why the document must be decoded in one call.
    `second_key()`: the last piece's text may hold a second events key (the note above _KEY;
    the C filter refuses such a piece itself)."""
    head = ks.BATCH - cols.n_events if cols.epoch_at is None and cols.n_events < ks.BATCH else 0
    kept = ev.decode_filtered(view, j == m - 1, head, j > 0)
    if kept is not None:
        if head:
            at = kt.first_exact_times(kept[0].head_ts)
            if at is not None:
                cols.epoch_at = cols.n_events + at
        cols.add_filtered(*kept)
        return None
    if j == m - 1 and second_key():
        return f"piece {j} may hold a second events key"
    events = ev.decode_tagged(view, j == m - 1)
    tagged = events is not None
    if events is None:  # a category the tagged scan does not list (or metadata): typed events
        try:
            events = ev.DOC.decode(view).traceEvents if j == m - 1 else ev.LIST.decode(view)
        except Exception as e:  # noqa: BLE001 - the one-call decode decides what it means
            return f"piece {j}: {type(e).__name__}"
    if j > 0 and (not events or not events[0].ph):
        return f"piece {j} is not cut at an event"
    if cols.epoch_at is None and cols.n_events < ks.BATCH:
        at = kt.first_exact(events[:ks.BATCH - cols.n_events])
        if at is not None:
            cols.epoch_at = cols.n_events + at
    (cols.add_tagged if tagged else cols.add_all)(events)
    return None


def join(parts: list[Columns]) -> Columns:
    """Columns of consecutive pieces as one document's: arrays end to end, key tables (names,
    threads, processes) renumbered in order of first appearance."""
    out = parts[0]
    for p in parts[1:]:
        names = [out.names.setdefault(k, len(out.names)) for k in p.names]
        threads = [out.threads.setdefault(k, len(out.threads)) for k in p.threads]
        procs = [out.procs.setdefault(k, len(out.procs)) for k in p.procs]
        for f in ("o_ts", "o_dur", "o_dev", "o_stream", "o_corr", "o_kind", "c_ts", "c_dur",
                  "c_corr", "r_ts", "r_dur", "r_names"):
            getattr(out, f).extend(getattr(p, f))
        out.o_name.extend([names[i] for i in p.o_name])
        out.c_thr.extend([threads[i] for i in p.c_thr])
        out.c_proc.extend([procs[i] for i in p.c_proc])
        out.r_thr.extend([threads[i] for i in p.r_thr])
        out.r_proc.extend([procs[i] for i in p.r_proc])
        out.range_counts.update(p.range_counts)
        out.syncs.extend(p.syncs)
        out.n_bad += p.n_bad
        out.n_events += p.n_events
    return out
