"""Vectorized interval arithmetic over many groups at once (a group is e.g. one step on one device).

All functions take parallel int64 arrays and never loop in Python over intervals.
"""
from __future__ import annotations

import numpy as np


def merge(group: np.ndarray, start: np.ndarray, end: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals per group. An interval whose start is <= the current end extends it.

    Returns (group, start, end) of the merged intervals, sorted by group then start.
    """
    n = start.shape[0]
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    if in_order(group, start):  # ops come in time order per stream: most inputs are sorted
        g, s, e = group, start, end
    else:
        order = np.lexsort((start, group))
        g, s, e = group[order], start[order], end[order]
    e = np.maximum(e, s)
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(g[1:], g[:-1], out=first[1:])
    gidx = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    base = s[gidx]
    rel_end = e - base
    width = int(rel_end.max()) + 1
    code = np.cumsum(first) - 1
    run = np.maximum.accumulate(code * width + rel_end) - code * width + base
    prev_end = np.empty(n, dtype=np.int64)
    prev_end[0] = 0
    prev_end[1:] = run[:-1]
    new = first | (s > prev_end)
    starts_at = np.flatnonzero(new)
    m_end = np.maximum.reduceat(e, starts_at)
    return g[starts_at], s[starts_at], m_end


def in_order(group: np.ndarray, start: np.ndarray) -> bool:
    """Whether the rows are sorted by group, then start (what a sort of them would leave)."""
    g0, g1 = group[:-1], group[1:]
    return bool(((g1 > g0) | ((g1 == g0) & (start[1:] >= start[:-1]))).all())


def gaps(group: np.ndarray, start: np.ndarray, end: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray]:
    """Gaps between consecutive merged intervals of the same group: (group, gap_ns)."""
    if group.shape[0] < 2:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    same = group[1:] == group[:-1]
    return group[1:][same], (start[1:] - end[:-1])[same]


def intersection_length(ga: np.ndarray, sa: np.ndarray, ea: np.ndarray,
                        gb: np.ndarray, sb: np.ndarray, eb: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the length of time covered by both merged sets A and B: (groups, length_ns).

    Each set must already be merged (disjoint intervals within a group).
    """
    if ga.shape[0] == 0 or gb.shape[0] == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    got = _intersection_by_search(ga, sa, ea, gb, sb, eb)
    return got if got is not None else _intersection_by_sweep(ga, sa, ea, gb, sb, eb)


def _firsts(g: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted array begins."""
    return np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))


def _intersection_by_search(ga: np.ndarray, sa: np.ndarray, ea: np.ndarray,
                            gb: np.ndarray, sb: np.ndarray, eb: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray] | None:
    """intersection_length by binary search in B: each A interval [s, e) overlaps B by B's
    coverage of its group up to e less that up to s. B's (group, start) pairs become one sorted
    int64 key (the group's rank, then the start less the group's first start); None where that
    key would not fit (or the times span 2**62 ns, so their differences could wrap), or where B
    is not sorted by group then start (merge's output is). A and B must be merged."""
    lo_t = min(int(sa.min()), int(sb.min()))
    if max(int(ea.max()), int(eb.max())) - lo_t >= 1 << 62:  # differences of times could wrap
        return None
    fb = _firsts(gb)
    ub = gb[fb]
    groups = np.union1d(ga[_firsts(ga)], ub)
    base = sb[fb]
    rank_b = np.repeat(np.arange(fb.shape[0]), np.diff(np.append(fb, gb.shape[0])))
    rel_b = sb - base[rank_b]
    width = max(int((eb - base[rank_b]).max()), 0) + 2
    if ub.shape[0] * width >= 1 << 62 or (np.diff(ub) <= 0).any():
        return None
    key_b = rank_b * width + rel_b
    if (np.diff(key_b) < 0).any():  # a start before its group's first one, or out of order
        return None
    cum = np.concatenate([[0], np.cumsum(eb - sb)])
    at = np.searchsorted(ub, ga)  # A's group among B's groups
    known = at < ub.shape[0]
    known[known] = ub[at[known]] == ga[known]
    r = np.where(known, at, 0)
    lo = fb[r]

    def covered(t: np.ndarray) -> np.ndarray:  # B's coverage of each A interval's group up to t
        q = r * width + np.clip(t - base[r], -1, width - 1)
        j = np.searchsorted(key_b, q, side="right")
        last = np.maximum(j - 1, 0)
        c = cum[j] - cum[lo] - np.maximum(eb[last] - t, 0)
        return np.where(known & (j > lo), c, 0)

    seg = covered(ea) - covered(sa)
    inv = np.searchsorted(groups, ga)
    return groups, np.bincount(inv, weights=seg, minlength=groups.shape[0]).astype(np.int64)


def _intersection_by_sweep(ga: np.ndarray, sa: np.ndarray, ea: np.ndarray,
                           gb: np.ndarray, sb: np.ndarray, eb: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """intersection_length by a sweep over both sets' ends, sorted by group and time."""
    g = np.concatenate([ga, ga, gb, gb])
    t = np.concatenate([sa, ea, sb, eb])
    na, nb = ga.shape[0], gb.shape[0]
    da = np.concatenate([np.ones(na, np.int64), -np.ones(na, np.int64), np.zeros(2 * nb, np.int64)])
    db = np.concatenate([np.zeros(2 * na, np.int64), np.ones(nb, np.int64), -np.ones(nb, np.int64)])
    order = np.lexsort((t, g))
    g, t, da, db = g[order], t[order], da[order], db[order]
    both = (np.cumsum(da) > 0) & (np.cumsum(db) > 0)
    seg = (t[1:] - t[:-1]) * (both[:-1] & (g[1:] == g[:-1]))
    groups, inv = np.unique(g[:-1], return_inverse=True)
    return groups, np.bincount(inv, weights=seg, minlength=groups.shape[0]).astype(np.int64)


def group_rows(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of equal-length integer columns, in lexicographic order, and each row's
    group: what `np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)` gives, without
    its sort of row records (ten times slower on a million rows). Each column's values are
    ranked (`_dense_rank`), the ranks joined into one int64 key in mixed radix (lexicographic
    order is kept), and the key is ranked once more."""
    n = cols[0].shape[0]
    if n == 0:
        return np.zeros((0, len(cols)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    key, size = np.zeros(n, dtype=np.int64), 1
    for c in cols:
        rank, k = _dense_rank(np.asarray(c))
        if size * k >= 1 << 62:  # the key would overflow: rank what it holds so far first
            key, size = _dense_rank(key)
        key, size = key * k + rank, size * k
    inv, groups = _dense_rank(key)
    rep = np.zeros(groups, dtype=np.int64)
    rep[inv] = np.arange(n)  # one row of each group (all its rows are equal)
    return np.stack([np.asarray(c)[rep] for c in cols], axis=1), inv


def _dense_rank(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's rank among the distinct values (0, 1, ...), and how many there are."""
    uniq, inv = unique_inverse(values)
    return inv, int(uniq.shape[0])


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` for an integer array of any integer dtype (the
    inverse as int64). Values spanning a range not much larger than their count (ids, devices,
    streams) go through a table over the range, with no sort; others through numpy's sorting
    unique."""
    n = values.shape[0]
    if n == 0:
        return values[:0].copy(), np.zeros(0, dtype=np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < max(4 * n, 1 << 16) and np.iinfo(np.int64).min <= lo <= hi <= np.iinfo(np.int64).max:
        off = values.astype(np.int64, copy=False) - lo  # in int64: a narrow dtype would wrap
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[off] = True
        table = np.cumsum(present, dtype=np.int64) - 1
        return (np.flatnonzero(present) + lo).astype(values.dtype, copy=False), table[off]
    u, inv = np.unique(values, return_inverse=True)
    return u, inv.ravel().astype(np.int64, copy=False)


def covered_before(ms: np.ndarray, me: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For merged, sorted intervals of one group: total covered length before each time in t."""
    if ms.shape[0] == 0:
        return np.zeros(t.shape[0], dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(me - ms)])
    i = np.searchsorted(ms, t, side="right")  # intervals starting at or before t
    full = cum[np.maximum(i - 1, 0)]
    last = np.clip(t - ms[np.maximum(i - 1, 0)], 0, (me - ms)[np.maximum(i - 1, 0)])
    return np.where(i > 0, full + last, 0)


def p95(sorted_values: np.ndarray) -> float | None:
    n = sorted_values.shape[0]
    if n == 0:
        return None
    return float(sorted_values[min(n - 1, int(np.floor(0.95 * n)))])


def median(values: np.ndarray) -> float | None:
    if values.shape[0] == 0:
        return None
    return float(np.median(values))
