"""The seams of the layout that are not import rules, checked on the source (ast): repositories
own the ORM row writes, a run record dict carries only fields of the record format, and each
package's `__init__` docstring names what lives there."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.layout import ROOT, concept_files, modules


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault",
            "popitem", "add", "discard", "sort", "reverse"}


def _rows_of(tree: ast.Module, path: Path) -> set[str]:
    """The names in a use case that hold ORM rows: parameters and variables annotated with a
    model (or a Protocol of the module, which names a row's fields without importing the model),
    and what a repository function, or a function of the module returning one, gives (for-loops
    over those included)."""
    models = {c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
              and any(isinstance(b, ast.Name) and b.id == "Protocol" for b in c.bases)}
    repos = set()
    pkg = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                if f"{mod}.{a.name}".startswith(modules("models")):  # `from . import tables`
                    models.add(a.asname or a.name)
                elif f"{mod}.{a.name}".startswith(modules("repositories")):
                    repos.add(a.asname or a.name)

    def names_model(ann: ast.AST | None) -> bool:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # a quoted annotation
            return bool(models & set(re.findall(r"\w+", ann.value)))
        return ann is not None and any(isinstance(n, ast.Name) and n.id in models
                                       for n in ast.walk(ann))

    giving = {f.name for f in ast.walk(tree)
              if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and names_model(f.returns)}

    def gives_rows(value: ast.AST) -> bool:
        if isinstance(value, ast.Call):
            f = value.func
            while isinstance(f, ast.Attribute):
                f = f.value
            return isinstance(f, ast.Name) and (f.id in repos or f.id in giving)
        return isinstance(value, ast.Name) and value.id in rows

    rows: set[str] = set()
    for _ in range(3):  # a name bound from another row name, in any order
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and names_model(node.annotation):
                rows.add(node.arg)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and names_model(node.annotation):
                rows.add(node.target.id)
            elif isinstance(node, ast.Assign) and gives_rows(node.value):
                rows.update(n.id for t in node.targets for n in ast.walk(t)
                            if isinstance(n, ast.Name))
            elif isinstance(node, (ast.For, ast.comprehension)) and gives_rows(node.iter):
                rows.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return rows


def row_writes(path: Path, text: str | None = None) -> list[str]:
    """Where a module (its `text`, else the file's) sets, deletes or mutates in place an
    attribute of an ORM row."""
    tree = ast.parse(path.read_text() if text is None else text)
    rows = _rows_of(tree, path)

    def of_row(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in rows

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and of_row(node.value):
            out.append(ast.unparse(node))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and isinstance(node.value, ast.Attribute) and of_row(node.value.value):
            out.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr in MUTATORS and isinstance(f.value, ast.Attribute) and of_row(f.value.value):
                out.append(ast.unparse(f))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("setattr", "delattr"):
            out.append(ast.unparse(node))
    return [f"{path.relative_to(ROOT)}:{node}" for node in out]


def test_repositories_own_the_row_writes():
    """A use case reads rows and hands them to repository functions to change; it never sets an
    attribute of an ORM row itself."""
    bad = [w for p in files("service/usecases") + concept_files("usecases") for w in row_writes(p)]
    assert bad == []


def test_row_writes_are_found():
    """The check above sees a write through each way a use case gets a row."""
    text = '''
from typing import TYPE_CHECKING, Protocol
from ..repositories import runs as runs_repo
from ..repositories.traces import get
if TYPE_CHECKING:
    from ..models import Benchmark, Run

class BenchmarkRow(Protocol):
    name: str

def bench_of(session) -> BenchmarkRow:
    return runs_repo.benchmark(session, "b")

def f(session, run: Run, plan):
    run.label = "x"
    row = get(session, 1)
    row.state = "done"
    for b in runs_repo.baselines_holding(session, 1):
        b.run_ids.append(2)
    bench = bench_of(session)
    bench.default_branch = "main"
    rows: "list[Run]" = []
    rows.extra["k"] = 1
    setattr(plan, "x", 1)
    plan.reference = [1]
'''
    sample = ROOT / "service" / "usecases" / "sample.py"
    rows = _rows_of(ast.parse(text), sample)
    assert {"run", "row", "b", "bench", "rows"} <= rows and "plan" not in rows
    got = [w.split(":", 1)[1] for w in row_writes(sample, text)]
    assert sorted(got) == sorted(["run.label", "row.state", "b.run_ids.append",
                                  "bench.default_branch", "rows.extra['k']",
                                  "setattr(plan, 'x', 1)"])


def test_each_package_says_what_lives_there():
    """A package's `__init__` docstring names each module and subpackage in it (a test package:
    its helpers and subpackages; its test_*.py files speak for themselves)."""
    bad = []
    for init in sorted(p for folder in ("service", "collectors", "dashboards", "bench", "tests")
                       for p in (ROOT / folder).rglob("__init__.py")):
        folder = init.parent
        rel = str(folder.relative_to(ROOT))
        if "data" in folder.relative_to(ROOT).parts or rel.startswith("bench/out"):
            continue  # bench/out: what the benches build and install (HTA's environment)
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if not doc:
            bad.append(f"{rel}: no docstring")
            continue
        inside = [p.stem for p in folder.glob("*.py") if not p.stem.startswith("__")]
        inside += [d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith(
            ("_", ".")) and (any(d.glob("*.py")) or any(d.glob("*/*.py")))]
        if rel.startswith("tests"):
            inside = [n for n in inside if not n.startswith("test_")]
        bad += [f"{rel}: names no {n}" for n in sorted(inside)
                if not re.search(rf"(?<![\w/]){re.escape(n)}(\.py|/|\b)", doc, re.I)]
    assert bad == []


def _private(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and node.value.startswith("_")


def private_keys(path: Path, text: str | None = None) -> list[str]:
    """Where a module (its `text`, else the file's) puts a key starting with "_" on a dict, or
    reads one back: a side channel riding on a record (what ingest knows beside a record lives
    in collectors/engines/record.py's EngineRecord instead)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if isinstance(node, ast.Subscript) and _private(node.slice):
            out.append(ast.unparse(node))
        elif isinstance(node, ast.Dict):
            out += [f"{{{ast.unparse(k)}: ...}}" for k in node.keys if k is not None and _private(k)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop", "setdefault") and node.args \
                and _private(node.args[0]):
            out.append(ast.unparse(node))
        elif isinstance(node, ast.Compare) and _private(node.left) \
                and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            out.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "dict":
            out += [f"dict({k.arg}=...)" for k in node.keywords if k.arg and k.arg.startswith("_")]
    return [f"{path.relative_to(ROOT)}: {w}" for w in out]


def test_record_dicts_carry_no_private_keys():
    """A run record moves from the engine readers to the emitter as a dict of record fields
    only; where it came from (engine output or not, the files it was read from) rides beside
    it in an EngineRecord, never under a private key inside it."""
    assert [w for p in files("collectors") for w in private_keys(p)] == []


def test_private_keys_are_found():
    """The check above sees each way a key is set on a dict or read back from it."""
    text = '''
def f(r, file_id):
    r["_engine"] = True
    rec = {"benchmark": "b", "_files": [file_id]}
    r.setdefault("_files", []).append(file_id)
    files = r.pop("_files", None)
    if "_files" in r and r.get("_engine"):
        del r["_mtime"]
    return dict(_seen=1), r["benchmark"], {"files": files}, rec
'''
    got = [w.split(": ", 1)[1] for w in private_keys(ROOT / "collectors" / "sample.py", text)]
    assert sorted(got) == sorted([
        "r['_engine']", "{'_files': ...}", "r.setdefault('_files', [])", "r.pop('_files', None)",
        "'_files' in r", "r.get('_engine')", "r['_mtime']", "dict(_seen=...)"])


def test_verdict_words_are_defined_once():
    """The API's verdict types are the vocabulary's words, and no other module spells them."""
    import re
    from typing import get_args

    from collectors.verdicts import GATE_VERDICTS, METRIC_VERDICTS
    from service.gate.schemas import GateOut, MetricVerdict

    assert set(get_args(MetricVerdict.model_fields["verdict"].annotation)) == set(METRIC_VERDICTS)
    assert set(get_args(GateOut.model_fields["verdict"].annotation)) == set(GATE_VERDICTS)
    spelled = re.compile(r"""(==|!=|in|return|=)\s*\(?["'](regression|improvement|inconclusive)["']""")
    bad = [f"{p.relative_to(ROOT)}:{n}" for folder in ("service", "collectors", "dashboards")
           for p in sorted((ROOT / folder).rglob("*.py")) if p.name != "verdicts.py"
           for n, line in enumerate(p.read_text().splitlines(), 1) if spelled.search(line)]
    assert bad == []


def test_config_keys_are_defined_once():
    """The server keys an engine's files name are the keys the gate refuses to pool across."""
    from collectors import configkeys
    from collectors.engines import identity
    from service.format import KEY_ORDER
    from service.gate import comparisons
    from service.schemas import FIXED_SERIES_KEYS

    assert comparisons.IDENTITY_KEYS == configkeys.SERVER_KEYS + configkeys.HARDWARE_KEYS
    assert set(configkeys.SERVER_KEYS) <= set(identity.WORKLOAD_KEYS)
    assert FIXED_SERIES_KEYS == configkeys.HARDWARE_KEYS and KEY_ORDER == configkeys.READING_ORDER
    spelled = re.compile(r"""^\w+_KEYS\s*=\s*\(\s*["']""")
    bad = [f"{p.relative_to(ROOT)}:{n}" for folder in ("service", "collectors", "dashboards")
           for p in sorted((ROOT / folder).rglob("*.py")) if p.name != "configkeys.py"
           for n, line in enumerate(p.read_text().splitlines(), 1)
           if spelled.match(line) and any(k in line for k in ('"tp"', '"model"', '"gpu"'))]
    assert bad == []


def test_every_answer_is_checked_by_its_response_model():
    """A route's JSON answer goes through its response model (FastAPI validates and filters
    it), so what the use case hands back and what the reference documents cannot drift: each
    route names `response_model`, and none returns a JSONResponse of its own (a status other
    than the default is set on the response it is given). A 204 and a file download carry no
    JSON."""
    routes = [*sorted((ROOT / "service" / "api" / "routes").glob("*.py")),
              *concept_files("routes")]
    bad, seen = [], 0
    for p in routes:
        tree = ast.parse(p.read_text())
        bad += [f"{p.relative_to(ROOT)}: JSONResponse" for n in ast.walk(tree)
                if isinstance(n, ast.Name) and n.id == "JSONResponse"]
        for f in ast.walk(tree):
            if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for d in f.decorator_list:
                if not (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                        and d.func.attr in ("get", "post", "put", "patch", "delete")):
                    continue
                seen += 1
                kw = {k.arg: k.value for k in d.keywords}
                no_json = (isinstance(kw.get("status_code"), ast.Constant)
                           and kw["status_code"].value == 204) or "FileResponse(" in ast.unparse(f)
                if "response_model" not in kw and not no_json:
                    bad.append(f"{p.relative_to(ROOT)}: {f.name} has no response_model")
    assert seen >= 25 and bad == []
