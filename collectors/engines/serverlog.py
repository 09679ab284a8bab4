"""A server log read whole (spec/api.md, Engine identity): its hard-wrapped settings lines joined
again, the model named by `Starting to load model`, the tensor-parallel size said by `(tp=N)` or
a world size, a speculative draft told apart from the model it drafts for, and the one rule that
turns a local model path into the model's id (used for a result's `model_id` and a log's model
alike)."""
from __future__ import annotations

import re
from typing import Any

# the start of a log record: a level and time (vLLM `INFO 11-28 10:00:01`, `2026-11-28 10:00:01`),
# SGLang's `[2026-11-28 10:00:00 ...]`, a worker prefix `(VllmWorker TP1 pid=..)`
RECORD_START = re.compile(r"^(?:\x1b\[[0-9;]*m)*(?:\([^)\n]*\bpid=\d+[^)\n]*\)\s*)?(?:\x1b\[[0-9;]*m)*"
                          r"(?:(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)\b|\[?\d{4}-\d\d-\d\d|"
                          r"\d\d-\d\d \d\d:\d\d)")
# the settings lines a terminal or a log collector may wrap in the middle of a word
SETTINGS = re.compile(r"with config: |non-default args: |server_args=ServerArgs\(")

# vLLM's workers: `Starting to load model /models/Llama-3-8B...` (once for the target, again
# for a speculative draft)
LOAD_MODEL = re.compile(r"Starting to load model (\S+?)(?:\.\.\.|\s|$)", re.M)
TP_MARK = re.compile(r"\(tp=(\d+)\)")
# vLLM's distributed start: `world_size=4 rank=0 ...` (older), `rank 0 in world size 4 is
# assigned as DP rank 0, PP rank 0, TP rank 0` (every rank of every data-parallel engine)
WORLD_SIZE = re.compile(r"\bworld[_ ]size[= ](\d+)")
# an architecture or class that is a speculative draft's, never the served model's
DRAFT_ARCH = re.compile(r"eagle|medusa|mtp|nextn|dflash|draft|mlp_speculator", re.I)

# Hugging Face's cache folder of a repository: `models--ORG--NAME`
HF_CACHE = re.compile(r"(?:^|/)models--([^/]+?)--([^/]+)(?:/|$)")


def unwrap(text: str) -> str:
    """The log with each hard-wrapped settings line joined again: the lines after a settings
    line that do not start a log record are its continuation (joined as written: a wrap cuts
    `tensor_parallel_si` / `ze=1` in the middle of a word), up to a blank line, the next record,
    a piece shorter than the one before it (a wrap's last piece), or once a `{...}` / `(...)`
    settings line has closed its brackets."""
    out: list[str] = []
    joining, width = False, 0
    for line in text.split("\n"):
        if joining and line.strip() and not RECORD_START.match(line):
            out[-1] += line
            joining, width = len(line) >= width and _open(out[-1]), len(line)
            continue
        out.append(line)
        joining, width = bool(SETTINGS.search(line)) and _open(line), len(line)
    return "\n".join(out)


def _open(line: str) -> bool:
    """Whether a settings line may go on: vLLM's engine config line always may (it is not
    bracketed); a `non-default args: {...}` or `ServerArgs(...)` line until its brackets close."""
    m = SETTINGS.search(line)
    if m is None or m.group() == "with config: ":
        return True
    rest = line[m.end() - (m.group().endswith("(")):]
    depth = 0
    for c in rest:
        depth += (c in "([{") - (c in ")]}")
    return depth > 0


def is_path(name: str) -> bool:
    """A local path rather than a hub name (`org/name`): absolute, relative with a dot or a
    tilde, a Windows path, or more than two parts."""
    return (name.startswith(("/", "./", "../", "~", "\\")) or bool(re.match(r"[A-Za-z]:[\\/]", name))
            or len([p for p in name.replace("\\", "/").split("/") if p]) > 2)


def model_id(value: Any) -> tuple[Any, str | None]:
    """(the model's id, the local path it was named by, or None). A hub name stays as it is; a
    local path becomes the Hugging Face `org/name` of a hub cache folder (`models--org--name`,
    its `snapshots/HASH` below it) or else its final folder's name, so one model copied under
    two cache folders is one model."""
    if not isinstance(value, str) or not value.strip():
        return value, None
    text = value.strip()
    if not is_path(text):
        return text, None
    m = HF_CACHE.search(text.replace("\\", "/"))
    if m:
        return f"{m.group(1)}/{m.group(2)}", text
    parts = [p for p in text.replace("\\", "/").split("/") if p not in ("", ".", "~")]
    if len(parts) >= 2 and parts[-2] == "snapshots":
        parts = parts[:-2]
    return (parts[-1], text) if parts else (text, None)


def loaded_models(text: str) -> list[str]:
    """The models vLLM's workers began to load, in order, each once."""
    return list(dict.fromkeys(m.rstrip(".,;") for m in LOAD_MODEL.findall(text)))


def tp_said(text: str, pp: int = 1, dp: int = 1) -> int | None:
    """The tensor-parallel size a log says outside its settings lines: `(tp=N)`, else the world
    size of its distributed start over the pipeline and data-parallel sizes."""
    found = TP_MARK.findall(text)
    if found:
        return int(found[-1])
    found = WORLD_SIZE.findall(text)
    if found and int(found[-1]) % (pp * dp) == 0:
        return int(found[-1]) // (pp * dp)
    return None


def is_draft(name: Any) -> bool:
    """A speculative draft's class or weights (`LlamaForCausalLMEagle3`, `...-EAGLE3-...`)."""
    return isinstance(name, str) and bool(DRAFT_ARCH.search(name.split("/")[-1]))


def speculative(method: Any, tokens: Any, draft: Any = None) -> str | None:
    """A speculative setting as one value: `METHOD:TOKENS` and the draft model's id after `@`
    (`EAGLE3:4@org/draft`); None where there is no speculative decoding."""
    if method in (None, "None", "") and draft in (None, "None", ""):
        return None
    text = str(method) if method not in (None, "None", "") else "draft"
    if tokens not in (None, "None", ""):
        text += f":{tokens}"
    if draft not in (None, "None", ""):
        text += f"@{model_id(str(draft))[0]}"
    return text
