"""`perfwarden curate`: expected change points and mutes of a series' metric on the server
(expected, mute, list, withdraw), each stored with who, when and why."""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

from collectors.errors import UsageError

from .common import api


def _when(text: str) -> datetime:
    """`--until`: a date or an ISO time; without a zone, UTC."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date like 2027-01-31, got {text!r}") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def add_curate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("curate", help="mark an expected change point or mute a metric of a "
                       "series (audited): expected, mute, list, withdraw")
    csub = p.add_subparsers(dest="curate_cmd", required=True)
    for name, help_ in (("expected", "the series' reference level moves to this run"),
                        ("mute", "the metric of the series no longer decides, until it expires")):
        c = csub.add_parser(name, help=help_)
        c.add_argument("--benchmark", required=True)
        c.add_argument("--series", type=int, required=True,
                       help="the series id: 'series N' on its benchmark page (pick the "
                       "series), or a run's series_id")
        c.add_argument("--metric", default="tok_s")
        c.add_argument("--note", required=True, help="why (stored with who and when)")
        c.add_argument("--server", required=True)
        if name == "expected":
            c.add_argument("--run", type=int, required=True, help="the new level's first run")
        else:
            until = c.add_mutually_exclusive_group(required=True)
            until.add_argument("--until", type=_when, help="when the mute ends (date or time)")
            until.add_argument("--days", type=float, help="the mute ends in this many days")
    c = csub.add_parser("list", help="the benchmark's curations in force")
    c.add_argument("--benchmark", required=True)
    c.add_argument("--all", action="store_true", help="withdrawn and expired ones too")
    c.add_argument("--server", required=True)
    c = csub.add_parser("withdraw", help="withdraw a curation (it stays in the audit)")
    c.add_argument("id", type=int)
    c.add_argument("--server", required=True)
    p.set_defaults(func=cmd_curate)


def cmd_curate(args: argparse.Namespace) -> int:
    if args.curate_cmd == "withdraw":
        row = api(args.server, "DELETE", f"/api/v1/curations/{args.id}")
        print(f"withdrew curation {row['id']}: {row['line']}", file=sys.stderr)
        return 0
    path = f"/api/v1/benchmarks/{quote(args.benchmark, safe='')}/curations"
    if args.curate_cmd == "list":
        rows = api(args.server, "GET", path, params={"all": "true"} if args.all else {})["data"]
        for r in rows:
            state = "in force" if r["in_force"] else \
                f"withdrawn by {r['withdrawn_by']}" if r["withdrawn_by"] else "expired"
            print(f"{r['id']}\t{r['kind']}\t{state}\t{r['line']}")
        return 0
    body = {"kind": args.curate_cmd, "series_id": args.series, "metric": args.metric,
            "note": args.note}
    if args.curate_cmd == "expected":
        body["run_id"] = args.run
    else:
        if args.days is not None and not 0 < args.days <= 366:
            raise UsageError("--days must lie between 0 and 366")
        until = args.until or datetime.now(timezone.utc) + timedelta(days=args.days)
        body["expires_at"] = until.isoformat()
    row = api(args.server, "POST", path, json=body)
    closed = f"; closed alert(s) {', '.join(map(str, row['closed_alerts']))}" \
        if row["closed_alerts"] else ""
    print(f"curation {row['id']}: {row['line']}{closed}", file=sys.stderr)
    return 0
