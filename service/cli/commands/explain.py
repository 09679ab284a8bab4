"""`perfwarden explain`'s body: the server's answer, or the same use case on the local database
(reads.py), printed: the keys, the kernels at the outlier levels, the deterministic-mode runs,
the decision."""
from __future__ import annotations

import argparse

from ...explain.schemas import ExplainOut
from ..common import api, command


def cmd_explain(args: argparse.Namespace) -> int:
    params: dict = {"benchmark": args.benchmark, "metric": args.metric}
    for k in ("label", "branch", "gpu"):
        if getattr(args, k):
            params[k] = getattr(args, k)
    if args.server:
        result = ExplainOut.model_validate(api(args.server, "GET", "/api/v1/explain",
                                               params=params))
    else:
        result = command("reads", "explain")(args)
    if args.json:
        print(result.model_dump_json(indent=1))
        return 0
    print_explain(result)
    return 0


def print_explain(r: ExplainOut) -> None:
    print(f"explain {r.metric} over {r.runs} run(s) of {r.benchmark} ({r.gpu})")
    print(f"\n  {'key':<18} {'explains':>9} {'p (Holm)':>9}  levels")
    for f in r.factors:
        p = "-" if f.p_corrected is None else f"{f.p_corrected:.2g}"
        print(f"  {f.key:<18} {100 * f.explains:>8.1f}% {p:>9}  {', '.join(map(str, f.levels))}")
    d = r.diff
    if d is not None:
        print(f"\n  {d.key}: outlier level(s) {'/'.join(d.outlier_levels) or '-'}, others "
              f"{'/'.join(d.reference_levels) or '-'}; traced: {'/'.join(d.traced_levels) or '-'}")
        for title, rows in (("only at the outlier levels", d.only_at_outliers),
                            ("gone at the outlier levels", d.gone_at_outliers),
                            ("largest share changes", d.share_changes)):
            if rows:
                print(f"\n  {d.what} {title}:{'':<{max(0, 50 - len(title) - len(d.what))}}"
                      "outliers  others")
                for k in rows:
                    print(f"    {k.shown:<62} {100 * k.outlier_share:>6.1f}% "
                          f"{100 * k.reference_share:>6.1f}%")
    det = r.deterministic
    print(f"\n  deterministic mode: {det.runs} run(s) of these cells"
          + (f", {det.identical_runs} bitwise identical ({det.identical_repeats}/{det.repeats} "
             "repeats)" if det.runs else f"; make them with: {det.command}"))
    print(f"\ndecision: {r.decision}")
