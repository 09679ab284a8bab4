"""`perfwarden experiment`: the collectors' experiment command (collectors/cli/experiment.py runs
the blocks, collectors/experiment.py keeps the books) with the full install's judge passed in:
without `--server`, the records in a SQLite file beside them, judged by the same use case the
API runs; the verdict printed as `perfwarden gate` prints it. The judge and the printing live in
commands/experiment.py, loaded when an experiment is judged."""
from __future__ import annotations

from collectors.experiment import Judging

from .common import command

JUDGING = Judging(local=command("experiment", "LocalJudge"), show=command("experiment", "show"))
