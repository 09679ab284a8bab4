"""`perfwarden ingest`: engine outputs and run records -> run records (kind detected by content)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..env import git_identity, nvidia_smi_gpus
from ..record import check, resolve_trace_files
from .identity import is_architecture, normalize_model, split, unknown_identity
from .logs import LogFacts, looks_like_log, parse_log
from .record import EngineRecord
from .serverlog import model_id
from .vllm import (
    EngineOutputError,
    as_metrics,
    commands_beside,
    kind_of,
    latency_samples,
    serve_config,
    serve_metrics,
    throughput_metrics,
)

MAX_INPUT_BYTES = 512 << 20


def _read_json_or_lines(path: Path, text: str) -> list[dict] | None:
    s = text.strip()
    if not s or s[0] not in "[{":
        return None
    try:
        obj = json.loads(s)
        if isinstance(obj, list):
            return [o for o in obj if isinstance(o, dict)] if all(isinstance(o, dict) for o in obj) \
                else None
        return [obj] if isinstance(obj, dict) else None
    except json.JSONDecodeError:
        pass
    out = []
    for i, line in enumerate(s.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise EngineOutputError(f"{path}: line {i} is not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise EngineOutputError(f"{path}: line {i} is not a JSON object")
        out.append(obj)
    return out


@dataclass
class Identity:
    """What a result file cannot say about itself (spec/api.md, `perfwarden ingest`):
    given on the command line it wins over the file; missing, engine outputs take the commit
    from GITHUB_SHA/GITHUB_REF_NAME or the git repository that holds the file (never the
    current directory's, where the file lies outside it) and the GPU from nvidia-smi."""

    config: dict[str, Any] = field(default_factory=dict)
    commit: str | None = None
    branch: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    repository: str | None = None
    pr: int | None = None
    started_at: str | None = None  # ISO 8601; else the file's own time, else the server's
    detect: bool = True  # look at the environment for what is not given


def _apply_identity(rec: dict, ident: Identity, engine_output: bool, env: dict) -> None:
    rec["config"] = {**rec.get("config", {}), **ident.config}
    hw = dict(rec.get("hardware") or {})
    if engine_output:  # `env` is empty where nothing is detected; the GPU count from the files' tp
        for k in ("commit", "branch"):
            if k in env["git"] and not rec.get(k):
                rec[k] = env["git"][k]
        if env["gpus"] and not hw.get("gpu"):
            hw["gpu"] = env["gpus"][0]
        if not hw.get("gpu_count"):
            cfg = rec["config"]
            ranks = 1
            for k in ("tp", "pp", "dcp"):
                if isinstance(cfg.get(k), int):
                    ranks *= cfg[k]
            if ranks > 1 or "tp" in cfg:
                hw["gpu_count"] = ranks
            elif env["gpus"]:
                hw["gpu_count"] = len(env["gpus"])
    for k in ("commit", "branch", "repository", "pr"):
        if getattr(ident, k) is not None:
            rec[k] = getattr(ident, k)
    if ident.gpu is not None:
        hw["gpu"] = ident.gpu
    if ident.gpu_count is not None:
        hw["gpu_count"] = ident.gpu_count
    if hw:
        rec["hardware"] = hw


def merge_repeats(records: list[dict]) -> list[dict]:
    """Repeats of one configuration are the trials of one run: samples pooled per
    configuration (one result file is one sample); exact metrics keep the first value."""
    return [e.record for e in _merge(EngineRecord(r) for r in records)]


def _merge(records: Iterable[EngineRecord]) -> list[EngineRecord]:
    """merge_repeats on records in the making: a merged run was read from all its files."""
    merged: dict[str, EngineRecord] = {}
    for e in records:
        r = e.record
        key = json.dumps([r["benchmark"], r.get("config", {})], sort_keys=True)
        if key not in merged:
            merged[key] = EngineRecord(
                {**r, "metrics": {n: {**m, "samples": list(m["samples"])}
                                  for n, m in r["metrics"].items()}},
                engine=e.engine, files=list(e.files))
            continue
        merged[key].files.extend(e.files)
        for name, m in r["metrics"].items():
            tgt = merged[key].record["metrics"].setdefault(name, {**m, "samples": []})
            if name not in ("kv_capacity_tokens", "kv_max_concurrency"):
                tgt["samples"].extend(m["samples"])
    return list(merged.values())


def ingest(paths: Sequence[str | Path], benchmark: str | None = None, label: str | None = None,
           batch_size: int | None = None, output_len: int | None = None,
           extra_config: dict | None = None, identity: Identity | None = None,
           trials: bool = False) -> tuple[list[dict], list[str]]:
    """Returns (run records, warnings). Raises EngineOutputError on unusable input. `trials`:
    the result files are repeats of one configuration and become one run."""
    records: list[EngineRecord] = []
    log_facts: list[tuple[Path, LogFacts, str]] = []
    warnings: list[str] = []
    for p in map(Path, paths):
        objs, text, file_id = _read(p)
        if objs is None:
            facts = parse_log(p, text)
            warnings.extend(facts.warnings)
            log_facts.append((p, facts, file_id))
            continue
        got = _from_objects(p, objs, benchmark, label, batch_size, output_len, file_id)
        engine = kind_of(objs[0]) != "record"
        records += [EngineRecord(r, engine=engine, files=[file_id] if engine else [])
                    for r in got]
    if log_facts and records:
        settled = set((identity.config if identity else {}) or {}) | set(extra_config or {})
        _apply_logs(records, log_facts, settled)
    elif log_facts:
        records = [_log_record(p, facts, file_id, benchmark, label)
                   for p, facts, file_id in log_facts]
    for e in records:
        if e.engine:
            normalize_model(e.record)
    if trials:
        records = _merge(records)
    _finish(records, identity or Identity(detect=False), extra_config, warnings,
            Path(paths[0]).resolve().parent if paths else None)
    return [e.record for e in records], warnings


def _read(p: Path) -> tuple[list[dict] | None, str, str]:
    """A file's JSON objects (None: a log), its text and the sha256 of its bytes."""
    if not p.is_file():
        raise EngineOutputError(f"{p}: no such file")
    if p.stat().st_size > MAX_INPUT_BYTES:
        raise EngineOutputError(f"{p}: larger than {MAX_INPUT_BYTES >> 20} MiB")
    raw = p.read_bytes()
    if not raw.strip():
        raise EngineOutputError(f"{p}: empty file")
    file_id = hashlib.sha256(raw).hexdigest()
    text = raw.decode("utf-8", errors="replace")
    try:
        objs = _read_json_or_lines(p, text)
    except EngineOutputError:
        if not looks_like_log(text):  # SGLang log lines start with '[' too
            raise
        objs = None
    if objs is None and not looks_like_log(text):
        raise EngineOutputError(f"{p}: not a vllm bench result, a run record, or a vLLM/SGLang "
                                "log with KV-cache lines")
    if objs is not None and not objs:
        raise EngineOutputError(f"{p}: no JSON objects")
    return objs, text, file_id


def _apply_logs(records: list[EngineRecord], log_facts: list[tuple[Path, LogFacts, str]],
                settled: set[str]) -> None:
    """Server logs beside engine results: their KV-cache figures, settings and start time go
    into every engine-output record. A log that names another model or tp than the result is
    another server's: refused, unless `--config` gives that key."""
    for p, facts, file_id in log_facts:
        for e in records:
            if not e.engine:
                continue
            rec = e.record
            _check_agrees(p, rec, facts, settled)
            rec["metrics"].update(facts.metrics())
            if facts.kv_derived:
                rec.setdefault("kv_cache", {})["derived"] = True
            for k, v in facts.config.items():  # the server's settings beside the result
                if k == "model" and is_architecture(v) and rec["config"].get("model"):
                    continue  # the result names the model; the log only its class
                rec["config"].setdefault(k, v)
            if facts.meta:
                rec["meta"] = {**facts.meta, **(rec.get("meta") or {})}
            e.files.append(file_id)
            if not rec.get("started_at"):
                rec["started_at"] = facts.started_at


def _same_model(a: Any, b: Any) -> bool:
    """One model under two spellings: a hub name and a local path to it end alike."""
    def name(v: Any) -> str:
        return str(model_id(v)[0]).rstrip("/").split("/")[-1].lower()
    return name(a) == name(b)


def _check_agrees(p: Path, rec: dict, facts: LogFacts, settled: set[str]) -> None:
    cfg = rec["config"]
    for key in ("model", "tp"):
        mine, theirs = cfg.get(key), facts.config.get(key)
        if key in settled or mine is None or theirs is None:
            continue
        if key == "model" and (is_architecture(theirs) or _same_model(mine, theirs)):
            continue
        if key == "tp" and mine == theirs:
            continue
        raise EngineOutputError(
            f"{p}: the log's {key}={theirs} is not the result's {key}={mine}: another "
            f"server's log? Give --config {key}=... to say which is right")


def _log_record(p: Path, facts: LogFacts, file_id: str, benchmark: str | None,
                label: str | None) -> EngineRecord:
    """A server log alone: one record of its KV-cache capacity."""
    m = facts.metrics()
    if not m:
        raise EngineOutputError(f"{p}: log has no KV-cache capacity line")
    return EngineRecord({"benchmark": benchmark or f"{facts.engine}-server",
                         "config": dict(facts.config), "metrics": m,
                         **({"meta": dict(facts.meta)} if facts.meta else {}),
                         "started_at": facts.started_at,
                         "source": {"kind": f"{facts.engine}-log", "sha256": file_id},
                         **({"label": label} if label else {}),
                         **({"kv_cache": {"derived": True}} if facts.kv_derived else {})},
                        engine=True, files=[file_id])


def _finish(records: list[EngineRecord], ident: Identity, extra_config: dict | None,
            warnings: list[str], home: Path | None = None) -> None:
    """The identity (command line, environment), start time and key of every record, checked.
    `home`: the folder of the first file, whose git repository (if any) gave the commit."""
    env = {"git": git_identity(str(home) if home else None) if ident.detect else {},
           "gpus": nvidia_smi_gpus() if ident.detect else []}
    for i, e in enumerate(records):
        rec, engine_output = e.record, e.engine
        if extra_config:
            rec.setdefault("config", {}).update(extra_config)
        _apply_identity(rec, ident, engine_output, env)
        if engine_output:
            normalize_model(rec)
            unknown_identity(rec, i, warnings)
            _started_and_key(rec, ident, e.files, i, warnings)
        elif not (rec.get("hardware") or {}).get("gpu"):
            warnings.append(f"record {i} ({rec['benchmark']}): no GPU model is known (give --gpu); "
                            "it cannot be matched to a series of another GPU")
        try:
            check(rec)
        except ValueError as e:
            raise EngineOutputError(f"record {i}: {e}") from None


def _started_and_key(rec: dict, ident: Identity, files: list[str], index: int,
                     warnings: list[str]) -> None:
    """An engine output's start: --started-at, else what the file says (vLLM's `date`, a log's
    first time stamp that names the year), else none (the server's time of receipt): a file's
    mtime changes with every download or copy of the same bytes. Its idempotency key hashes the
    files' bytes and the record's identity, never a time, so a retry or a re-download of the
    same files stores nothing new."""
    if ident.started_at:
        rec["started_at"] = ident.started_at
    elif not rec.get("started_at"):
        rec.pop("started_at", None)
        warnings.append(f"record {index} ({rec['benchmark']}): no date in its files; the "
                        "server's time of receipt is its start (give --started-at)")
    who = {k: rec.get(k) for k in ("benchmark", "label", "config", "commit", "branch",
                                   "repository", "pr", "hardware")}
    blob = json.dumps({"files": files, "index": index, "identity": who}, sort_keys=True,
                      separators=(",", ":"), default=str)
    rec["idempotency_key"] = "pw1f-" + hashlib.sha256(blob.encode()).hexdigest()[:40]


def _from_objects(p: Path, objs: list[dict], benchmark, label, batch_size, output_len,
                  file_id: str) -> list[dict]:
    kinds = {kind_of(o) for o in objs}
    if None in kinds:
        i = [kind_of(o) for o in objs].index(None)
        raise EngineOutputError(f"{p}: object {i + 1} is neither a vllm bench result nor a run record")
    if kinds == {"record"}:
        for o in objs:  # the command line wins over what the file says
            if label:
                o["label"] = label
            if benchmark:
                o["benchmark"] = benchmark
            if o.get("trace_files"):  # relative to the record file, wherever it was copied
                o["trace_files"] = [str(f) for f in resolve_trace_files(o, p.parent)]
        return objs
    if len(kinds) > 1:
        raise EngineOutputError(f"{p}: mixes result kinds {sorted(str(k) for k in kinds)}")
    kind = kinds.pop()
    flags = commands_beside(p)
    out: list[dict] = []
    if kind == "serve":
        groups: dict[str, list[tuple[dict, dict]]] = {}
        cmd_flags = {k: v for k, v in flags.items() if k not in ("batch_size", "dataset_name")}
        for o in objs:
            dataset = o.get("dataset_name") or flags.get("dataset_name")
            cfg, meta = split({**cmd_flags, **serve_config(o)}, dataset)
            groups.setdefault(json.dumps(cfg, sort_keys=True), []).append((o, meta))
        for key, group in groups.items():
            samples: dict[str, list[float]] = {}
            for o, _ in group:
                for k, v in serve_metrics(p, o).items():
                    samples.setdefault(k, []).append(v)
            first, meta = group[0]
            engine = "sglang" if first.get("backend") == "sglang" else "vllm"
            rec = _record(p, f"{engine}-serve", benchmark, label, json.loads(key), samples, first,
                          file_id)
            if meta:
                rec["meta"] = {**(rec.get("meta") or {}), **meta}
            out.append(rec)
    elif kind == "throughput":
        samples = {}
        for o in objs:
            for k, v in throughput_metrics(p, o).items():
                samples.setdefault(k, []).append(v)
        out.append(_record(p, "vllm-throughput", benchmark, label, flags, samples, objs[0], file_id))
    else:
        bs = batch_size or flags.get("batch_size")
        ol = output_len or flags.get("output_len")
        for o in objs:
            samples = latency_samples(p, o, bs, ol)
            cfg = dict(flags)
            if bs:
                cfg["batch_size"] = bs
            if ol:
                cfg["output_len"] = ol
            out.append(_record(p, "vllm-latency", benchmark, label, cfg, samples, o, file_id))
    return out


def _record(p: Path, kind: str, benchmark, label, config: dict, samples: dict, obj: dict,
            file_id: str) -> dict:
    """One run record of a result file (`source`: its kind and the sha256 of its bytes, never
    its name, so a renamed copy of the same bytes is the same record)."""
    model = model_id(config.get("model") or obj.get("model_id") or obj.get("model"))[0]
    name = benchmark or (f"{kind}-{str(model).split('/')[-1]}" if model else kind)
    rec = {"benchmark": name, "config": config, "metrics": as_metrics(samples),
           "started_at": _date(obj), "source": {"kind": kind, "sha256": file_id}}
    if label:
        rec["label"] = label
    return rec


def _date(obj: dict) -> str | None:
    d = obj.get("date")
    if isinstance(d, str) and len(d) >= 15 and d[:8].isdigit():  # vllm: YYYYMMDD-HHMMSS
        try:
            return f"{d[0:4]}-{d[4:6]}-{d[6:8]}T{d[9:11]}:{d[11:13]}:{d[13:15]}Z"
        except IndexError:
            return None
    return None
