"""Interleaved A/B experiments on one host: the two arms run alternately in separate processes,
in balanced blocks (ABBA BAAB ...), so slow drift of the machine cancels in each block's
candidate-minus-baseline difference (spec/api.md, "Experiments").

Standard library only (it runs on GPU nodes). Each arm command writes run records or engine
outputs to the path substituted for `{out}`; the runner reads them with the same readers as
`perfwarden ingest` and tags every record with `experiment {id, arm, block, looks}` (looks: the
number of looks the experiment was planned with, `max_pairs - pairs + 1` with --until-decided,
else 1) and the question asked (`metrics`, `thresholds`, `vary`, those given; spec/api.md, One
experiment one answer, so every later asker judges it the same way at alpha / looks).
The decision
whether to add blocks, and the verdict, are the judge's, passed in (a `Judge`): the full install
judges on a local SQLite database (service/cli/commands/experiment.py), a GPU node asks the server
(`server_judge`), so the statistics stay in the service. The bookkeeping (the id, `{out}`,
complete blocks, looks, writing and posting the records) lives here once, for both commands.
"""
from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .engines.ingest import ingest
from .errors import CliError, UsageError
from .record import post_json, post_records, with_key, write_records
from .verdicts import INCONCLUSIVE

BASELINE, CANDIDATE = "baseline", "candidate"


def block_order(block: int) -> tuple[str, str]:
    """The arms of block `block` in run order: the Thue-Morse sequence, so blocks go
    AB BA BA AB BA AB AB BA ... (ABBA BAAB ...): every order effect cancels over pairs of
    blocks, and linear drift over every four."""
    flip = bin(block).count("1") % 2
    return (CANDIDATE, BASELINE) if flip else (BASELINE, CANDIDATE)


@dataclass
class ExperimentConfig:
    baseline_cmd: str
    candidate_cmd: str
    pairs: int = 6  # blocks to run (the first look with --until-decided)
    max_pairs: int = 0  # --until-decided: add blocks up to this many
    exp_id: str = ""
    benchmark: str | None = None
    label: str | None = None
    workdir: str = ""
    timeout_s: float = 3600.0
    quiet: bool = False
    question: dict = field(default_factory=dict)  # the gate fields asked: metrics, thresholds, vary
    records: list[dict] = field(default_factory=list)
    arm_seconds: list[float] = field(default_factory=list)  # each arm process's wall time

    @property
    def looks(self) -> int:
        """The looks planned: one per block from `pairs` to `max_pairs` (--until-decided), else 1."""
        return max(1, self.max_pairs - self.pairs + 1) if self.max_pairs else 1


def _log(cfg: ExperimentConfig, msg: str) -> None:
    if not cfg.quiet:
        print(msg, file=sys.stderr, flush=True)


# Compile caches the arms' processes share (each arm is a fresh process: without a shared cache
# every one of them compiles its Triton and inductor kernels again); a cache the caller set wins.
SHARED_CACHES = {"TRITON_CACHE_DIR": "triton", "TORCHINDUCTOR_CACHE_DIR": "inductor"}


def arm_env(workdir: str) -> dict[str, str]:
    env = dict(os.environ)
    for var, sub in SHARED_CACHES.items():
        env.setdefault(var, str(Path(workdir) / "cache" / sub))
    return env


def decoding_seconds(records: list[dict]) -> float:
    """The seconds an arm's records say were spent in timed decode trials."""
    return sum(float(t.get("wall_s") or 0.0) for r in records for t in r.get("trials") or []
               if isinstance(t, dict))


def _run_arm(cfg: ExperimentConfig, arm: str, block: int) -> list[dict]:
    out = Path(cfg.workdir) / f"b{block:03d}-{arm}.json"
    template = cfg.baseline_cmd if arm == BASELINE else cfg.candidate_cmd
    cmd = template.replace("{out}", shlex.quote(str(out)))
    log = out.with_suffix(".log")
    started = time.monotonic()
    with open(log, "wb") as f:
        try:
            r = subprocess.run(cmd, shell=True, stdout=f, stderr=subprocess.STDOUT,
                               timeout=cfg.timeout_s, env=arm_env(cfg.workdir))
        except subprocess.TimeoutExpired:
            raise CliError(f"block {block}, {arm} arm: the command ran past {cfg.timeout_s:g} s "
                           f"and was stopped; log: {log}") from None
    wall = time.monotonic() - started
    cfg.arm_seconds.append(wall)
    if r.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        raise CliError(f"block {block}, {arm} arm: the command exited {r.returncode} "
                       f"({tail[0][:200]}); log: {log}")
    if not out.is_file():
        raise CliError(f"block {block}, {arm} arm: the command wrote nothing to {{out}} ({out})")

    try:
        records, warnings = ingest([out], benchmark=cfg.benchmark)
    except ValueError as e:
        raise CliError(f"block {block}, {arm} arm: {e}") from None
    for w in warnings:
        _log(cfg, f"warning: {w}")
    for rec in records:
        rec.pop("idempotency_key", None)  # the tag makes it another record
        rec["experiment"] = {"id": cfg.exp_id, "arm": arm, "block": block, "looks": cfg.looks,
                             **cfg.question}
        rec["label"] = f"{cfg.label or cfg.exp_id}-{arm}"
        rec.pop("trace_files", None)
        with_key(rec)
    decoding = decoding_seconds(records)
    _log(cfg, f"  block {block} {arm}: {len(records)} record(s) in {wall:.1f} s, "
              f"{decoding:.2f} s of it decoding ({100 * decoding / wall:.0f}%; the rest is "
              f"start-up)")
    return records


def complete(records: list[dict]) -> tuple[list[int], list[dict]]:
    """The blocks that hold both arms, and their records (a stopped experiment keeps these)."""
    arms: dict[int, set[str]] = {}
    for r in records:
        arms.setdefault(r["experiment"]["block"], set()).add(r["experiment"]["arm"])
    done = sorted(b for b, a in arms.items() if a == {BASELINE, CANDIDATE})
    keep = set(done)
    return done, [r for r in records if r["experiment"]["block"] in keep]


def run_experiment(cfg: ExperimentConfig,
                   should_stop: Callable[[list[dict], int], bool] | None = None) -> list[dict]:
    """Run blocks until `cfg.pairs` are done, then (with `should_stop`) one block at a time
    until it says stop or `cfg.max_pairs` is reached. Returns every record. A failing arm
    stops the experiment with CliError; the records of finished blocks stay in `cfg.records`."""
    Path(cfg.workdir).mkdir(parents=True, exist_ok=True)
    limit = max(cfg.pairs, cfg.max_pairs) if should_stop else cfg.pairs
    block = 0
    while block < limit:
        first, second = block_order(block)
        _log(cfg, f"experiment {cfg.exp_id}: block {block + 1}/{limit} ({first} then {second})")
        recs = _run_arm(cfg, first, block) + _run_arm(cfg, second, block)
        cfg.records.extend(recs)
        block += 1
        if should_stop is not None and block >= cfg.pairs and should_stop(cfg.records, block):
            break
    _log(cfg, f"experiment {cfg.exp_id}: {block} block(s), arm processes "
              f"{sum(cfg.arm_seconds):.1f} s in all")
    return cfg.records


def new_id() -> str:
    """`exp-YYYYmmdd-HHMMSS-RANDOM` (UTC)."""
    return f"exp-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


def check_commands(baseline_cmd: str, candidate_cmd: str) -> None:
    """Each arm's command must write its results to `{out}`."""
    for cmd, flag in ((baseline_cmd, "--baseline-cmd"), (candidate_cmd, "--candidate-cmd")):
        if "{out}" not in cmd:
            raise UsageError(f"{flag}: the command must write its results to {{out}}")


class Judge(ABC):
    """Gives the experiment's verdict: `flush` hands it the complete blocks not yet seen,
    `verdict` answers the gate request `body` (a GateOut as JSON); called between blocks, it
    says whether to stop. `where` names it in the printout."""

    where = ""

    def __init__(self, body: dict):
        self.body = body

    @abstractmethod
    def flush(self, records: list[dict]) -> None:
        """Take the complete blocks of `records` not yet taken."""

    @abstractmethod
    def verdict(self) -> dict:
        """The gate's answer to `self.body` over the blocks taken."""

    def __call__(self, records: list[dict], blocks: int) -> bool:
        self.flush(records)
        verdict = self.verdict()["verdict"]
        print(f"experiment {self.body['experiment']}: after {blocks} block(s): {verdict}",
              file=sys.stderr, flush=True)
        return verdict != INCONCLUSIVE


class ServerJudge(Judge):
    """The judge of a node without the service (spec/api.md, Experiments on GPU nodes): each
    finished
    block is posted, then the server's gate gives the experiment's verdict."""

    def __init__(self, body: dict, post: Callable[[list[dict]], object],
                 ask: Callable[[dict], dict], where: str = ""):
        super().__init__(body)
        self.post, self.ask, self.where = post, ask, where
        self.posted: set[int] = set()

    def flush(self, records: list[dict]) -> None:
        _, recs = complete(records)
        new = [r for r in recs if r["experiment"]["block"] not in self.posted]
        if new:
            self.post(new)
            self.posted.update(r["experiment"]["block"] for r in new)

    def verdict(self) -> dict:
        return self.ask(self.body)


def server_judge(server: str, body: dict) -> ServerJudge:
    """A ServerJudge that posts to and asks `server`."""

    def post(recs: list[dict]) -> None:
        ids = post_records(server, recs)
        print(f"posted {len(ids)} run(s) of experiment {body['experiment']}", file=sys.stderr)

    return ServerJudge(body, post, lambda b: post_json(server, "/api/v1/gate", b), server)


@dataclass
class Outcome:
    exp_id: str
    blocks: list[int]  # the complete blocks
    result: dict | None  # the judge's verdict (a GateOut as JSON); None without a judge
    judged_by: str = ""


@dataclass(frozen=True)
class Judging:
    """What the caller of the experiment command passes in: the judge without `--server`
    (`local(workdir, body)`; None on a GPU node, where `--until-decided` then needs a server)
    and how the outcome is printed (returns the exit code)."""

    local: Callable[[Path, dict], Judge] | None
    show: Callable[[Outcome], int]


def conduct(cfg: ExperimentConfig, judge: Judge | None, until_decided: bool,
            out: str | None) -> Outcome:
    """Run the experiment (the judge decides between blocks with `until_decided`), keep its
    complete blocks, write them to `out`, hand them to the judge and take its verdict. A
    failing arm raises CliError after the finished blocks are written and handed over."""
    failure = None
    try:
        run_experiment(cfg, judge if until_decided else None)
    except CliError as e:
        failure = e
    blocks, records = complete(cfg.records)
    if records and out:
        write_records(records, out)
        if out != "-":
            print(f"wrote {len(records)} run record(s) of {len(blocks)} block(s) to {out}",
                  file=sys.stderr)
    if judge is not None and records:
        judge.flush(records)
    if failure is not None:
        raise CliError(f"{failure} (experiment {cfg.exp_id} stopped; {len(blocks)} finished "
                       "block(s) kept)")
    return Outcome(cfg.exp_id, blocks, judge.verdict() if judge else None,
                   judge.where if judge else "")
