"""`perfwarden baseline`: named baselines on the server (set creates or moves, show, list,
delete)."""
from __future__ import annotations

import argparse
import json
import sys

from collectors.errors import CliError

from .common import api


def add_baseline(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("baseline", help="named baselines: set, show, list, delete")
    bsub = p.add_subparsers(dest="baseline_cmd", required=True)
    for name in ("set", "show", "delete"):
        b = bsub.add_parser(name)
        b.add_argument("name")
        b.add_argument("--benchmark", required=True)
        b.add_argument("--server", required=True)
        if name == "set":
            b.add_argument("--run", type=int, action="append", required=True)
    b = bsub.add_parser("list")
    b.add_argument("--benchmark")
    b.add_argument("--server", required=True)
    p.set_defaults(func=cmd_baseline)


def cmd_baseline(args: argparse.Namespace) -> int:
    """Baselines without curl: set (create or move), show, list, delete."""
    base = f"/api/v1/baselines/{args.benchmark}/{args.name}" if getattr(args, "name", None) else ""
    if args.baseline_cmd == "set":
        try:
            row = api(args.server, "PUT", base, json={"run_ids": args.run})
            verb = "moved"
        except CliError as e:
            if "answered 404" not in str(e):
                raise
            row = api(args.server, "POST", "/api/v1/baselines", json={
                "name": args.name, "benchmark": args.benchmark, "run_ids": args.run})
            verb = "created"
        print(f"{verb} baseline {row['name']!r} of {row['benchmark']}: runs {row['run_ids']}",
              file=sys.stderr)
    elif args.baseline_cmd == "show":
        row = api(args.server, "GET", base)
        print(json.dumps(row, indent=1))
    elif args.baseline_cmd == "list":
        params = {"benchmark": args.benchmark} if args.benchmark else {}
        for row in api(args.server, "GET", "/api/v1/baselines", params=params)["data"]:
            print(f"{row['benchmark']}\t{row['name']}\truns {','.join(map(str, row['run_ids']))}\t"
                  f"updated {row['updated_at']}")
    else:
        api(args.server, "DELETE", base)
        print(f"deleted baseline {args.name!r} of {args.benchmark}", file=sys.stderr)
    return 0
