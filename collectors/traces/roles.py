"""Stream roles, decided once per trace set (spec/metrics.md, Stream roles).

Each device's main stream is, under CUDA graph replay, the stream its graph launches start on
(the launch stream: the first op of every replay runs there, and the step's eager work runs
there too), else its busiest stream in the steps. The set then agrees on one stream number: the
one most devices name (their busy time breaks a tie) is the main lane of every device where it
is as busy as that device's own choice, or within NEAR_TIE of it; the other streams in the
steps are aux. A device whose busiest streams lie within NEAR_TIE of each other, with nothing
but busy time to decide, is said in a warning naming the flag that decides it.
Devices are named by rank (the device's place among the set's) and local GPU number.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import intervals as iv
from .model import OP_GRAPH, Trace

if TYPE_CHECKING:
    from .options import Options, Projection

NEAR_TIE = 0.10  # busy times within this share of the busiest are a near tie


@dataclass
class Roles:
    main: dict[int, int]  # device -> main stream
    aux: dict[int, set[int]]  # device -> aux streams
    how: dict[int, str] = field(default_factory=dict)  # device -> how its main was chosen
    notes: list[str] = field(default_factory=list)  # near ties and disagreements, for warnings


def graph_replays(trace: Trace) -> np.ndarray:
    """Per op: launched by a graph launch (several ops share the launch's correlation id), or a
    whole graph's replay traced as one row."""
    ops = trace.ops
    if not len(ops):
        return np.zeros(0, dtype=bool)
    key = (ops.proc << 40) | (ops.corr & ((1 << 40) - 1))
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    return ((counts[inv.ravel()] > 1) & (ops.corr >= 0)) | (ops.kind == OP_GRAPH)


def device_places(trace: Trace) -> dict[int, tuple[int, int, str]]:
    """device key -> (rank, local GPU, its name): the rank is the device's place among the set's
    devices (one file per rank, or one file holding every rank's GPU); the GPU is the number its
    producer gave it (`GPU 1` in its label), the device key where the label has none; the name
    is the label's model in parentheses, where it has one."""
    out: dict[int, tuple[int, int, str]] = {}
    # the loaders label exactly the devices that hold ops: their keys spare a pass over the ops
    devices = sorted(trace.device_labels) or np.unique(trace.ops.device).tolist()
    for rank, d in enumerate(devices):
        tail = trace.device_labels.get(int(d), "").split(":")[-1].strip()
        num, _, model = tail[4:].partition(" ") if tail.startswith("GPU ") else ("", "", "")
        out[int(d)] = (rank, int(num) if num.isdigit() else int(d), model)
    return out


def device_name(places: dict[int, tuple[int, int, str]], device: int) -> str:
    """`rank 1 / GPU 1`, with the model where the producer named it: the one device numbering
    of every table, page and message."""
    rank, gpu, model = places.get(device, (device, device, ""))
    return f"rank {rank} / GPU {gpu}" + (f" {model}" if model else "")


def _busy(trace: Trace, ins: np.ndarray) -> dict[int, dict[int, float]]:
    ops = trace.ops
    out: dict[int, dict[int, float]] = {}
    if not ins.any():
        return out
    pairs, inv = iv.group_rows(ops.device[ins], ops.stream[ins])
    total = np.bincount(inv, weights=(ops.end_ns - ops.start_ns)[ins])
    for (d, s), b in zip(pairs.tolist(), total.tolist()):
        out.setdefault(int(d), {})[int(s)] = float(b)
    return out


def _launch_streams(trace: Trace, ins: np.ndarray, replay: np.ndarray) -> dict[int, int]:
    """device -> the stream most of its graph replays in the steps start on."""
    ops = trace.ops
    sel = np.flatnonzero(ins & replay)
    if not sel.size:
        return {}
    key = (ops.proc[sel] << 40) | (ops.corr[sel] & ((1 << 40) - 1))
    order = np.lexsort((ops.start_ns[sel], key))
    k = key[order]
    first = sel[order[np.concatenate([[True], k[1:] != k[:-1]])]]
    votes: dict[int, Counter] = {}
    for d, s in zip(ops.device[first].tolist(), ops.stream[first].tolist()):
        votes.setdefault(int(d), Counter())[int(s)] += 1
    return {d: min(c.items(), key=lambda x: (-x[1], x[0]))[0] for d, c in votes.items()}


def _near_tie(busy: dict[int, float]) -> tuple[int, int, float] | None:
    top = sorted(busy.items(), key=lambda x: (-x[1], x[0]))
    if len(top) < 2 or top[0][1] <= 0:
        return None
    gap = 1 - top[1][1] / top[0][1]
    return (top[0][0], top[1][0], gap) if gap <= NEAR_TIE else None


def decide(trace: Trace, proj: Projection, replay: np.ndarray | None = None) -> Roles:
    """The roles from the trace alone (no user choice)."""
    ins = proj.op_step >= 0
    replay = graph_replays(trace) if replay is None else replay
    busy = _busy(trace, ins)
    launch = _launch_streams(trace, ins, replay)
    own: dict[int, int] = {}
    how: dict[int, str] = {}
    for d, b in busy.items():
        if d in launch and launch[d] in b:
            own[d], how[d] = launch[d], "graph launch stream"
        else:
            own[d], how[d] = min(b.items(), key=lambda x: (-x[1], x[0]))[0], "busiest"
    votes = Counter(own.values())
    weight = {s: sum(b.get(s, 0.0) for b in busy.values()) for s in votes}
    shared = min(votes, key=lambda s: (-votes[s], -weight[s], s)) if votes else None
    places = device_places(trace)
    notes: list[str] = []
    main: dict[int, int] = {}
    for d, b in sorted(busy.items()):
        s = own[d]
        if shared is not None and s != shared and how[d] == "busiest" \
                and b.get(shared, 0.0) >= (1 - NEAR_TIE) * b[s]:
            s, how[d] = shared, "the set's main stream"
        main[d] = s
        tie = _near_tie(b)
        if how[d] != "graph launch stream" and tie is not None:
            a, c, gap = tie
            notes.append(f"{device_name(places, d)}: streams {a} and {c} are within "
                         f"{gap * 100:.0f}% of each other's busy time; stream {s} is main "
                         f"({how[d]}); --main-stream {places[d][1]}:STREAM decides")
    differ = sorted({s for s in main.values()})
    if len(differ) > 1:
        notes.append("the main stream differs across devices ("
                     + ", ".join(f"{device_name(places, d)}: {s}" for d, s in sorted(main.items()))
                     + "): the busiest streams differ by more than "
                     f"{NEAR_TIE * 100:.0f}%; --main-stream decides")
    aux = {d: {s for s in b if s != main[d]} for d, b in busy.items()}
    return Roles(main, aux, how, notes)


def stream_roles(trace: Trace, proj: Projection, opts: Options,
                 replay: np.ndarray | None = None) -> Roles:
    """The roles decided from the trace (decide), then the user's --main-stream/--aux-stream."""
    roles = decide(trace, proj, replay)
    main, aux = roles.main, roles.aux
    if opts.main_streams or opts.aux_streams:
        roles.notes.clear()  # the user decided
    for d, s in opts.main_streams:
        for dd in _devices_matching(trace, d):
            main[dd] = s
            roles.how[dd] = "--main-stream"
            aux.setdefault(dd, set()).discard(s)
            if not opts.aux_streams:
                aux[dd] = {x for x in _streams_in_steps(trace, proj, dd) if x != s}
    if opts.aux_streams:
        chosen: dict[int, set[int]] = {}
        for d, s in opts.aux_streams:
            for dd in _devices_matching(trace, d):
                chosen.setdefault(dd, set()).add(s)
        for dd in aux:
            aux[dd] = chosen.get(dd, set())
        for dd, ss in chosen.items():
            aux[dd] = ss
            if main.get(dd) in ss:
                rest = [x for x in _streams_in_steps(trace, proj, dd) if x not in ss]
                if rest:
                    main[dd] = rest[0]
                else:
                    main.pop(dd, None)
    return roles


def _devices_matching(trace: Trace, device: int) -> list[int]:
    """A user's device number names that device in every file (ranks keep their own numbering)."""
    labels = trace.device_labels
    out = [k for k, v in labels.items() if v.split(":")[-1] == f"GPU {device}"
           or v.split(":")[-1].startswith(f"GPU {device} (")]
    return out or [device]


def _streams_in_steps(trace: Trace, proj: Projection, device: int) -> list[int]:
    ins = (proj.op_step >= 0) & (trace.ops.device == device)
    return sorted(set(trace.ops.stream[ins].tolist()))
