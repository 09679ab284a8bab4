"""The auxiliary lanes of a trace's steps: aux and main intervals merged per (step, device)
group once per analysis, and the aux_ and step-time figures of any set of steps (all of them,
or one rank's) selected from them (spec/metrics.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import intervals as iv
from .model import Trace

if TYPE_CHECKING:
    from .options import Projection
    from .roles import Roles

NS_PER_US = 1000.0


def gap_stats(gaps_ns: np.ndarray, min_gap_us: float) -> dict:
    thr = min_gap_us * NS_PER_US
    idle = np.sort(gaps_ns[gaps_ns >= thr]) / NS_PER_US
    return {
        "aux_gap_count": int(idle.size),
        "aux_gap_mean_us": float(idle.mean()) if idle.size else None,
        "aux_gap_median_us": iv.median(idle),
        "aux_gap_p95_us": iv.p95(idle),
        "aux_bubble_count": int((gaps_ns < thr).sum()),
    }


AUX_KEYS = ("aux_gap_count", "aux_gap_mean_us", "aux_gap_median_us", "aux_gap_p95_us",
            "aux_bubble_count", "aux_idle_per_step_us", "aux_busy_per_step_us",
            "aux_main_overlap_us_per_step")


@dataclass
class Lanes:
    """The merged aux and main intervals of every (step, device) group, computed once per
    analysis: the figures of any set of steps (all, or one rank's) select their groups from
    these (merging, gaps and intersections are per group, so a subset's are the same)."""

    ndev: int
    aux_group: np.ndarray  # per merged aux interval: step_device_groups' key
    aux_busy: np.ndarray  # its length
    gap_group: np.ndarray  # per gap between merged aux intervals of one group
    gap: np.ndarray
    inter_group: np.ndarray  # per group with aux and main work: their overlap
    inter: np.ndarray
    step_span: np.ndarray  # per step: first op start to last op end (0 where none)


def step_device_groups(trace: Trace, proj: Projection) -> tuple[np.ndarray, int, int]:
    """Per op, the key of its (step, device) group: step * ndev + (device - the smallest
    device), so that key // ndev is the step and key % ndev + that device the device, whatever
    the devices' numbers (a trace without device numbers has -1 throughout); with the devices'
    ndev and smallest number. Keys order as (step, device) does."""
    dev = trace.ops.device
    dmin = int(dev.min()) if len(dev) else 0
    ndev = int(dev.max()) - dmin + 1 if len(dev) else 1
    return proj.op_step * ndev + (dev - dmin), ndev, dmin


def lanes(trace: Trace, proj: Projection, roles: Roles) -> Lanes:
    ops = trace.ops
    ins = proj.op_step >= 0
    group, ndev, _ = step_device_groups(trace, proj)
    is_aux = np.zeros(len(ops), dtype=bool)
    is_main = np.zeros(len(ops), dtype=bool)
    for d, ss in roles.aux.items():
        on_d = ops.device == d
        if ss:
            is_aux |= on_d & np.isin(ops.stream, list(ss))
        if d in roles.main:
            is_main |= on_d & (ops.stream == roles.main[d])
    is_aux &= ins
    is_main &= ins
    ga, sa, ea = iv.merge(group[is_aux], ops.start_ns[is_aux], ops.end_ns[is_aux])
    gg, gap = iv.gaps(ga, sa, ea)
    gm, sm, em = iv.merge(group[is_main], ops.start_ns[is_main], ops.end_ns[is_main])
    gi, inter = iv.intersection_length(ga, sa, ea, gm, sm, em)
    nst = proj.step_start_ns.shape[0]
    span = np.zeros(nst, dtype=np.int64)
    if ins.any():
        st = proj.op_step[ins]
        first = np.full(nst, np.iinfo(np.int64).max)
        last = np.full(nst, np.iinfo(np.int64).min)
        np.minimum.at(first, st, ops.start_ns[ins])
        np.maximum.at(last, st, ops.end_ns[ins])
        has = np.zeros(nst, dtype=bool)
        has[st] = True
        span[has] = (last - first)[has]
    return Lanes(ndev, ga, ea - sa, gg, gap, gi, inter, span)


def lane_figures(lanes: Lanes, roles: Roles, step_sel: np.ndarray, min_gap_us: float) -> dict:
    """The aux_ keys over the steps in step_sel (a boolean mask over steps)."""
    nsteps = int(step_sel.sum())
    out: dict = {k: None for k in AUX_KEYS}
    if nsteps == 0 or not any(roles.aux.values()):
        return out
    gap = lanes.gap[step_sel[lanes.gap_group // lanes.ndev]]
    out.update(gap_stats(gap, min_gap_us))
    out["aux_idle_per_step_us"] = float(gap.sum()) / nsteps / NS_PER_US
    busy = lanes.aux_busy[step_sel[lanes.aux_group // lanes.ndev]]
    out["aux_busy_per_step_us"] = float(busy.sum()) / nsteps / NS_PER_US
    inter = lanes.inter[step_sel[lanes.inter_group // lanes.ndev]]
    out["aux_main_overlap_us_per_step"] = float(inter.sum()) / nsteps / NS_PER_US
    return out


def step_times(lanes: Lanes, proj: Projection, step_sel: np.ndarray) -> dict:
    keys = ("step_gpu_time_us_mean", "step_gpu_time_us_median", "step_gpu_time_us_p95")
    if not (proj.op_step >= 0).any() or not step_sel.any():
        return {k: None for k in keys}
    span = np.sort(lanes.step_span[step_sel]) / NS_PER_US
    return {keys[0]: float(span.mean()), keys[1]: iv.median(span), keys[2]: iv.p95(span)}
