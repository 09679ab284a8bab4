"""Number formatting and the series label: one place for both (CLI tables, PR comment, check
summary, webhook body, dashboard).

The number rule: an integer (or a float holding a whole number) prints as an integer with
thousands separators (`2,097,152`), anything else with `digits` decimals; a unit follows where
it is known (`79.0 us`, `578,368 tokens`); a number that leaves in a machine body (JSON) is
rounded to 12 significant digits, so binary float noise (`999.9686800000001`) never shows."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from collectors.configkeys import READING_ORDER
from collectors.traces.load import rank_of

from .stats.levels import level_pct as level_pct  # the printed level of alpha, one source

KEY_ORDER = READING_ORDER
_SHORT = {"batch_size": "M"}
HIDDEN = ("gpu", "gpu_count")  # shown once, at the end
# the identity keys a run's files did not say (`model,tp`): part of its series, read as words
UNKNOWN = "unknown"


def unknown_keys(series: Mapping[str, Any]) -> list[str]:
    """The identity keys a series does not know (its `unknown` config key, `model,tp`)."""
    v = series.get(UNKNOWN)
    return [k for k in v.split(",") if k] if isinstance(v, str) else []


# the flag of `perfwarden ingest` that gives each identity key a run's files did not say
INGEST_FLAGS = {"model": "--config model=...", "tp": "--config tp=...", "gpu": "--gpu",
                "gpu_count": "--gpu-count"}
NEVER_VARIED = ("gpu", "gpu_count")


def settle_unknown(keys: Sequence[str]) -> str:
    """How a user says what is unknown: the ingest flags, or `--vary` where a key may vary."""
    flags = " ".join(INGEST_FLAGS.get(k, f"--config {k}=...") for k in keys)
    varied = [k for k in keys if k not in NEVER_VARIED]
    return f"give {flags} at ingest" + (
        f" or {' '.join(f'--vary {k}' for k in varied)}" if varied else "")


def unknown_words(series: Mapping[str, Any]) -> str:
    """`model unknown tp unknown`: what a series does not know, as its label says it."""
    return " ".join(f"{k} unknown" for k in unknown_keys(series))


def is_whole(v: float) -> bool:
    """A whole number (ints, and floats such as 2097152.0 that counted something)."""
    return isinstance(v, int) or (math.isfinite(v) and float(v).is_integer() and abs(v) < 1e15)


def num(v: float | None, digits: int = 2, missing: str = "-") -> str:
    if v is None:
        return missing
    if isinstance(v, bool):
        return str(v)
    if is_whole(v):
        return f"{int(v):,}"
    return f"{v:,.{digits}f}"


def quantity(v: float | None, unit: str | None = None, digits: int | None = None,
             missing: str = "-") -> str:
    """A number and its unit (`79.0 us`, `87.60 tok/s`, `578,368 tokens`); one decimal for
    times in us and ms, two otherwise, unless `digits` says."""
    if v is None:
        return missing
    if digits is None:
        digits = 1 if unit in ("us", "ms") else 2
    text = num(v, digits, missing)
    return f"{text} {unit}" if unit else text


def clean(v: Any) -> Any:
    """A value for a JSON body: floats rounded to 12 significant digits (no float noise), whole
    floats kept as floats; containers cleaned through."""
    if isinstance(v, float):
        return float(f"{v:.12g}") if math.isfinite(v) else v
    if isinstance(v, Mapping):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    return v


def pct(v: float | None, missing: str = "-") -> str:
    return missing if v is None else f"{v:+.2f}%"


def interval(lo: float | None, hi: float | None, missing: str = "-") -> str:
    return missing if lo is None or hi is None else f"{lo:+.2f}..{hi:+.2f}%"


def _value(v: Any) -> str:
    if isinstance(v, Mapping) and set(v) == {"baseline", "candidate"}:  # a varied key
        return f"{_value(v['baseline'])}→{_value(v['candidate'])}"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def series_label(series: Mapping[str, Any]) -> str:
    """Every config key of a series (varied keys as baseline→candidate) and its GPUs; never cut,
    so two different series never read the same."""
    words = unknown_words(series)
    keys = [k for k in KEY_ORDER if k in series] + sorted(
        k for k in series if k not in KEY_ORDER and k not in HIDDEN and not (
            k == UNKNOWN and words))
    parts = [f"{_SHORT.get(k, k)}={_value(series[k])}" for k in keys
             if series[k] not in (None, "")]
    hw = hardware(series.get("gpu"), series.get("gpu_count"))
    if hw:
        parts.append(hw)
    if words:
        parts.append(words)
    return " ".join(parts) or "-"


def split_series(series: list[Mapping[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The keys every series shares (said once, in a header) and, per series, only the keys
    that differ between them. A key missing from some series counts as differing."""
    if not series:
        return {}, []
    keys: set[str] = set().union(*(set(s) for s in series))
    common = {k: series[0][k] for k in keys
              if all(k in s and s[k] == series[0][k] for s in series)}
    if not all(k in common for k in HIDDEN if k in keys):  # GPU model and count read as one
        common = {k: v for k, v in common.items() if k not in HIDDEN}
    return common, [{k: v for k, v in s.items() if k not in common} for s in series]


def series_short(config: Mapping[str, Any], gpu: str | None = None,
                 gpu_count: int | None = None) -> str:
    """The few keys a chart legend needs (tp, M, order, graphs, load) and the GPUs."""
    parts = []
    if "tp" in config:
        parts.append(f"tp={config['tp']}")
    if "batch_size" in config:
        parts.append(f"M={config['batch_size']}")
    if "shared_experts" in config:
        parts.append(_value(config["shared_experts"]))
    if "cuda_graphs" in config:
        parts.append("graphs" if config["cuda_graphs"] else "eager")
    for k in ("concurrency", "request_rate"):
        if k in config:
            parts.append(f"{k}={config[k]}")
    parts.append(hardware(gpu, gpu_count))
    parts.append(unknown_words(config))
    return " ".join(p for p in parts if p)


def hardware(gpu: str | None, gpu_count: int | None) -> str:
    """`8x NVIDIA H200`; just the device when its count is unknown (`cpu`), never `?x cpu`."""
    if not gpu:
        return f"{gpu_count}x GPU" if gpu_count else ""
    return f"{gpu_count}x {gpu}" if gpu_count else gpu


def trace_rank(filename: str) -> str:
    """`, rank 3` for a rank file of a trace set (`trace_M1_rank3.json.gz`), else empty."""
    r = rank_of(filename)
    return f", rank {r}" if r is not None else ""


# Markdown (PR comment, check summary, job summary, GitHub issue): what data may hold that
# would change the document's structure. Line breaks end a table row or start a heading;
# `|` splits a table cell; a backtick ends a code span; `<` opens HTML (`<!--` hides the rest);
# `[` opens a link; `*`, `_`, `~`, `$` start emphasis, strikethrough or math; `#` a heading;
# `\` and `&` escape or decode what follows; `@name` notifies a GitHub user.
_LINE_BREAKS = str.maketrans({c: " " for c in "\r\n\v\f\x85\u2028\u2029"})
_MD_ENTITY = str.maketrans({c: f"&#{ord(c)};" for c in "\\`*_[]<>|#~$&"})
_MD_CODE_UNSAFE = frozenset("`|<&")


def md(value: Any, code: bool = False, block: bool = False) -> str:
    """`value` as Markdown text that shows it literally and cannot change the structure around
    it: one line, its Markdown and HTML characters as entities, `@` kept from mentioning anyone
    and a bare URL (`https://`, `www.`) from becoming a link (a zero-width space in each).
    `code`: as inline code; a plain value keeps its backticks, one holding a backtick, `|`,
    `<` or `&` becomes `<code>`, escaped as text is. `block`:
    a fenced code block of its lines, the fence longer than any backtick run in them (so no
    line can close it)."""
    if block:
        text = "\n".join(str(value).splitlines())
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", text)), default=0))
        return f"{fence}\n{text}\n{fence}"
    text = str(value).translate(_LINE_BREAKS)
    if code:
        if _MD_CODE_UNSAFE.isdisjoint(text):
            return f"`{text}`"  # in a code span nothing else is read as Markdown or a mention
        return f"<code>{_no_autolink(text.translate(_MD_ENTITY))}</code>"
    return _no_autolink(text.translate(_MD_ENTITY))


# what GitHub turns into a link or a mention by itself: a scheme's `://`, a `www.` host,
# `@name` (and an e-mail address); a zero-width space breaks each, the text reads the same
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.I)


def _no_autolink(text: str) -> str:
    return _AUTOLINK.sub("\u200b", text)


def md_comment(name: Any) -> str:
    """A name inside a hidden HTML comment (a marker): `--`, `<`, `>`, `%` and line breaks
    percent-encoded, so it cannot end the comment; a name without them stays as it is."""
    return re.sub(r"-(?=-)|[<>%\r\n]", lambda m: f"%{ord(m.group()):02X}", str(name))
