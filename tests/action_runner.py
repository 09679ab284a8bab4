"""Runs the composite action of action.yml as a GitHub runner does: each `run:` step with bash
(-e -o pipefail), its `env:` with the `${{ }}` expressions resolved from the inputs and the
github/runner/steps contexts, GITHUB_ENV carried to later steps, GITHUB_OUTPUT read into
`steps.ID.outputs`, and `if: always()` steps run after a failure while the others are skipped."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.conftest import ROOT

ACTION = ROOT / "action.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load() -> dict:
    return yaml.safe_load(ACTION.read_text())


def resolve(expr: str, ctx: dict) -> str:
    """The expressions the action uses: context paths, 'literals' and `a || b`."""
    for alt in (a.strip() for a in expr.split("||")):
        if alt.startswith("'") and alt.endswith("'"):
            return alt[1:-1]
        if not re.fullmatch(r"[A-Za-z_][\w.-]*", alt):
            raise AssertionError(f"expression this runner cannot evaluate: {expr!r}")
        v: object = ctx
        for part in alt.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if v not in (None, ""):
            return str(v)
    return ""


def substitute(text: str, ctx: dict) -> str:
    return EXPR.sub(lambda m: resolve(m.group(1), ctx), str(text))


def read_env_file(path: Path) -> dict[str, str]:
    """GITHUB_ENV / GITHUB_OUTPUT: `KEY=VALUE` lines and `KEY<<DELIM` ... `DELIM` blocks."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[key] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out


@dataclass
class Job:
    steps: list[tuple[str, int | None, str]] = field(default_factory=list)  # None: skipped
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(code not in (0, None) for _, code, _ in self.steps)

    def code(self, name: str) -> int | None:
        return next(c for n, c, _ in self.steps if n == name)

    @property
    def log(self) -> str:
        """Every step's name, exit code and whole output, for an assertion's message."""
        return "\n".join(f"--- {n}: {c}\n{out}" for n, c, out in self.steps)


def run_action(inputs: dict[str, str], github: dict, base_env: dict[str, str], tmp: Path) -> Job:
    action = load()
    given = {k: v.get("default", "") for k, v in action["inputs"].items()}
    runner = {"temp": base_env["RUNNER_TEMP"]}
    ctx: dict = {"github": github, "runner": runner, "steps": {}}
    ctx["inputs"] = {k: substitute(v, ctx) for k, v in given.items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"inputs the action does not declare: {unknown}"
    ctx["inputs"].update(inputs)
    env_file = tmp / "github_env"
    env_file.write_text("")
    job = Job()
    for step in action["runs"]["steps"]:
        assert step.get("shell") == "bash" and "run" in step, step
        assert "${{" not in step["run"], "expressions belong in env:, not in run:"
        cond = step.get("if", "success()")
        if cond not in ("always()", "success()"):
            raise AssertionError(f"condition this runner cannot evaluate: {cond!r}")
        if cond == "success()" and job.failed:
            job.steps.append((step["name"], None, ""))
            continue
        out_file = tmp / "github_output"
        out_file.write_text("")
        env = {**base_env, **read_env_file(env_file), "GITHUB_ENV": str(env_file),
               "GITHUB_OUTPUT": str(out_file)}
        env.update({k: substitute(v, ctx) for k, v in (step.get("env") or {}).items()})
        script = tmp / "step.sh"
        script.write_text(step["run"])
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
        job.steps.append((step["name"], r.returncode, r.stdout + r.stderr))
        if step.get("id"):
            ctx["steps"][step["id"]] = {"outputs": read_env_file(out_file)}
    job.outputs = {k: substitute(v["value"], ctx) for k, v in action.get("outputs", {}).items()}
    return job
