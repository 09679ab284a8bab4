"""A forked child dies with the process that forked it and holds none of its sockets or pipe
ends: the pieces of a split Kineto scan, the rank-set loader's pool, the sandboxed analysis."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import socket
import time

from collectors import forked
from collectors.traces import kineto_split as split
from tests.collectors.test_kineto_split import _kernels

PROCS = 3


def _socket_inodes(pid: int) -> set[str]:
    """The sockets and pipes `pid` holds open ("socket:[N]", "pipe:[N]"), standard input, output
    and error aside."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if int(fd) <= 2:
            continue
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("socket:", "pipe:")):
            out.add(target)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _grandchild(parent: int, keep_fd: int, report) -> None:
    forked.settle(parent, {keep_fd})
    report.send(os.getpid())
    time.sleep(600)


def _middle(report) -> None:
    """Forks a child that settles, then waits to be killed."""
    ctx = mp.get_context("fork")
    p = ctx.Process(target=_grandchild, args=(os.getpid(), report.fileno(), report))
    p.start()
    time.sleep(600)


def test_a_settled_child_drops_the_listening_socket_and_dies_with_its_parent():
    ctx = mp.get_context("fork")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        mine = os.readlink(f"/proc/self/fd/{listener.fileno()}")
        recv, send = ctx.Pipe(duplex=False)
        middle = ctx.Process(target=_middle, args=(send,))
        middle.start()
        assert recv.poll(60), "the grandchild never reported"
        pid = recv.recv()
        held = _socket_inodes(pid)
        assert mine in _socket_inodes(middle.pid)  # the plain fork inherits it
        assert mine not in held  # the settled one does not
        assert os.readlink(f"/proc/{pid}/fd/{send.fileno()}") in held  # what it was given
        os.kill(middle.pid, signal.SIGKILL)
        middle.join()
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the child outlived its killed parent"


def test_a_child_whose_parent_died_before_it_settled_exits():
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        forked.settle(os.getpid() + 10**6, {send.fileno()})  # a parent that is not its own
        send.send("still here")

    p = ctx.Process(target=child)
    p.start()
    p.join(30)
    assert p.exitcode == 1
    assert not recv.poll(0.1)


def test_split_pieces_hold_no_socket_or_sibling_pipe(tmp_path, monkeypatch):
    """Each piece sees only its own pipe end: the pieces run while the test looks at them (a spy
    in `run` writes what each piece holds before it works)."""
    doc = {"traceEvents": _kernels(3000)}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    seen = tmp_path / "seen"
    seen.mkdir()
    real_run = split.run

    def spy(src, spans, j0, j1, rx, tick=None):  # in the piece: its descriptors, then work
        if os.getpid() != parent:
            (seen / str(os.getpid())).write_text("\n".join(sorted(_socket_inodes(os.getpid()))))
        return real_run(src, spans, j0, j1, rx, tick)

    parent = os.getpid()
    monkeypatch.setattr(split, "run", spy)
    monkeypatch.setattr(split, "PIECE_BYTES", 4096)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        mine = os.readlink(f"/proc/self/fd/{listener.fileno()}")
        src = split.open_plain(path)
        cols = split.scan(src, None, PROCS)
    assert cols is not None and cols.n_events == len(doc["traceEvents"])
    held = [set(f.read_text().split()) for f in seen.iterdir()]
    assert len(held) == PROCS
    # multiprocessing's resource tracker, where an earlier test of this process started it: its
    # pipe is kept on purpose (collectors/forked.py, settle)
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker._resource_tracker, "_fd", None)
    kept = {os.readlink(f"/proc/self/fd/{tracker}")} if isinstance(tracker, int) else set()
    for h in held:
        assert mine not in h
        assert len(h - kept) == 1, h  # its own pipe's write end only (stdio is the test's, a file)
