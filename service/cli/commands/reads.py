"""The reads `noise`, `attribute` and `explain` answer from the local database when no
`--server` is given: the server's own use cases, with the statistics libraries they bring
(statsmodels, scipy, ruptures), loaded only then; with `--server` the command bodies are
clients of the API alone."""
from __future__ import annotations

import argparse

from ...attribution.fit import attribution as attribution_of
from ...attribution.schemas import AttributionOut
from ...explain.report import explain as explain_of
from ...explain.schemas import ExplainOut
from ...history.reads import noise as noise_of
from ...history.schemas import NoiseOut
from .local import on_local


def noise(args: argparse.Namespace) -> NoiseOut:
    return on_local(lambda session: noise_of(session, args.benchmark, args.metric, args.branch,
                                             args.baseline))


def attribution(args: argparse.Namespace) -> AttributionOut:
    return on_local(lambda session: attribution_of(session, args.benchmark, args.metric,
                                                   args.label, args.branch, args.gpu))


def explain(args: argparse.Namespace) -> ExplainOut:
    return on_local(lambda session: explain_of(session, args.benchmark, args.metric, args.label,
                                               args.branch, args.gpu))
