"""Runs whose files did not say which server they measured (spec/api.md, Engine identity): the
identity keys a run does not know are in its series config as `unknown` (`model,tp`), so such a
run never shares a series with one that knows them; here, what a comparison makes of that."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import Invalid
from ..format import UNKNOWN, settle_unknown, unknown_keys


def unvaried(config: Mapping[str, Any], vary: Sequence[str]) -> dict[str, Any]:
    """A series' config without the varied keys: a varied key it does not know is no longer
    said unknown either (the request compares across it)."""
    out = {k: v for k, v in config.items() if k not in vary}
    left = [k for k in unknown_keys(out) if k not in vary]
    if UNKNOWN in out:
        out.pop(UNKNOWN)
        if left:
            out[UNKNOWN] = ",".join(left)
    return out


def knows(desc: Mapping[str, Any], key: str) -> bool:
    """Whether a series knows an identity key: a value, not one its `unknown` names (a GPU
    count of 0 is none)."""
    return desc.get(key) not in (None, "") and key not in unknown_keys(desc) and not (
        key == "gpu_count" and desc.get(key) == 0)


def _lacks(desc: Mapping[str, Any]) -> set[str]:
    """The identity keys a series does not know: its `unknown`, and a GPU model or count it
    has no value for (a run posted without them)."""
    return set(unknown_keys(desc)) | {k for k in ("gpu", "gpu_count") if k in desc and
                                      not knows(desc, k)}


ORDER = ("model", "tp", "gpu", "gpu_count")


def check_unknown(cand: Mapping[str, Any], base: Sequence[Mapping[str, Any]], c_id: int,
                  vary: Sequence[str]) -> None:
    """Invalid (422, code identity_unknown) where a candidate series (its config and GPUs) has
    no baseline run of its own series and a baseline series differs from it only in what one of
    the two does not know: identity keys its `unknown` names, and settings a side that does not
    know its server lacks (a result alone has no log's dtype). Whether both sides measured one
    server cannot be told, so they are neither pooled nor judged; the line names the keys and
    the flags that give them. Keys both sides hold with other values set them apart: no
    refusal, the comparison says there is no baseline run in the series."""
    mine = unvaried(cand, vary)
    for b in base:
        theirs = unvaried(b, vary)
        lack = (_lacks(mine), _lacks(theirs))
        apart = {k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k)} - {UNKNOWN}
        if not (lack[0] or lack[1]) or not all(
                k in lack[0] | lack[1] or (k not in mine and lack[0]) or (k not in theirs and lack[1])
                for k in apart):
            continue
        keys = sorted(apart or lack[0] | lack[1],
                      key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))
        both = {**mine, **theirs}
        known = {k: both[k] for k in keys if both.get(k) not in (None, "", 0)}
        side = "the candidate's" if all(k in lack[0] or k not in mine for k in keys) else \
            "the baseline's" if all(k in lack[1] or k not in theirs for k in keys) else "each side's"
        other = ", ".join(f"{k}={v!r}" for k, v in known.items())
        raise Invalid(
            f"run_ids: {', '.join(f'{k} unknown' for k in keys)} in {side} series (candidate "
            f"run {c_id}{'; the other side has ' + other if other else ''}): whether both sides "
            f"measured one server cannot be told; {settle_unknown(keys)}", "run_ids",
            code="identity_unknown")
