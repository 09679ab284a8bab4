"""The import rules of the layout, checked on the source (ast), so a shortcut fails CI; the
other seams are in test_seams.py."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.layout import CONCEPTS, ROOT, concept_files, modules, role


def imports(path: Path) -> set[str]:
    """Absolute module names a file imports (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    pkg = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{p.relative_to(ROOT)} imports {m}" for p in files(folder) for m in sorted(imports(p))
            if m.startswith(forbidden)]


def test_stats_are_pure():
    assert offenders("service/stats", ("sqlalchemy", "fastapi", "starlette", "service.errors",
                                       "service.repositories", "service.models", "service.config",
                                       "service.usecases", "service.api") + modules("routes")
                     + modules("models") + modules("repositories")) == []
    text = "".join(p.read_text() for p in files("service/stats"))
    for word in ("sqlalchemy", "ApiError", "HTTPException", "fastapi"):
        assert word not in text


def test_only_usecases_call_repositories():
    """The queries (service/repositories/, a concept's queries.py) are called by use cases (and
    a concept's logic) and by each other alone."""
    bad = [o for folder in ("service", "dashboards") for o in
           offenders(folder, modules("repositories"))
           if role(ROOT / o.split(" imports ")[0]) not in ("usecases", "repositories")]
    assert bad == []


def test_nothing_imports_routes_but_the_app():
    bad = [o for folder in ("service", "dashboards", "collectors") for o in
           offenders(folder, modules("routes"))
           if not o.startswith("service/main.py") and role(ROOT / o.split(" imports ")[0]) != "routes"]
    assert bad == []


def test_collectors_import_nothing_of_the_service_and_cli_is_not_a_library():
    assert offenders("collectors", ("service", "dashboards")) == []
    assert offenders("service", ("collectors.cli",)) == [
        "service/cli/__init__.py imports collectors.cli",
        "service/cli/__init__.py imports collectors.cli.build_parser",
        "service/cli/__init__.py imports collectors.cli.dispatch"]  # it mounts the parsers, no more
    assert [o for o in offenders("service", ("collectors.cli",)) if "CliError" in o] == []


def test_packages_import_one_way():
    """The collectors below the service, the dashboard above it (lazy imports included): the
    service finds the dashboard as an installed site (service/site.py), never by import."""
    import graphlib

    graph = {pkg: {m.split(".")[0] for p in files(pkg) for m in imports(p)
                   if m.split(".")[0] in PROJECT and m.split(".")[0] != pkg} for pkg in PROJECT}
    try:
        order = tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        raise AssertionError(f"packages import each other: {' -> '.join(e.args[1])}") from None
    assert order == ("collectors", "service", "dashboards")


def test_the_migrations_read_the_tables_without_the_libraries_of_the_logic():
    """Every command that checks the database's revision runs migrations/env.py, which imports
    each concept's tables: they bring SQLAlchemy, never the statistics, the queue or the pages
    (a package's __init__ that imported its logic made `perfwarden tokens list` pay 2 s)."""
    env = (ROOT / "migrations" / "env.py").read_text()
    tables = sorted(line.split()[1] for line in env.splitlines()
                    if line.startswith("import service.") and line.split()[1].endswith(".tables"))
    assert len(tables) >= 8
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, {', '.join(tables)}; print(' '.join(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    heavy = ("scipy", "statsmodels", "ruptures", "procrastinate", "plotly", "fastapi", "torch")
    assert sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in heavy}) == []


def test_the_clients_of_the_api_load_no_statistics():
    """`noise`, `attribute` and `explain` with `--server` are clients of the API: their bodies
    load the statistics libraries only for the local database's answer (commands/reads.py)."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, service.cli.commands.explain, "
         "service.cli.commands.history; print(' '.join(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    heavy = ("scipy", "statsmodels", "ruptures", "sqlalchemy", "alembic", "fastapi")
    assert sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in heavy}) == []


def test_errors_carry_no_http():
    text = (ROOT / "service" / "errors.py").read_text()
    assert "status" not in text and "fastapi" not in text and "starlette" not in text
    assert "40" not in text and "42" not in text  # no status numbers


def _modules() -> dict[str, Path]:
    out = {}
    for folder in ("service", "dashboards", "collectors"):
        for p in files(folder):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def test_no_private_name_crosses_a_module():
    """`from x import _y` and `x._y` between modules are shortcuts past a module's surface."""
    mods = _modules()
    bad = []
    for name, p in mods.items():
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                bad += [f"{name} imports {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                imported = {n for n in imports(p) if n.split(".")[-1] == node.value.id}
                if any(m in mods for m in imported):
                    bad.append(f"{name} reads {node.value.id}.{node.attr}")
    assert bad == []


def test_use_cases_import_no_cycle_and_comparisons_is_the_one_matcher():
    """No cycle among the use cases (a concept's logic included; lazy imports included), and
    only comparisons.py builds stats Comparisons (matches series, picks metrics)."""
    mods = {n: p for n, p in _modules().items() if role(p) == "usecases"}
    graph = {n: {m for m in imports(p) if m in mods and m != n} for n, p in mods.items()}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        return seen
    assert [n for n in graph if n in reach(n)] == []
    builders = [n for n, p in _modules().items()
                if "Comparison(" in p.read_text() and not n.startswith("service.stats")]
    assert builders == ["service.gate.comparisons"]


# Only repositories, migrations and the composition root touch SQLAlchemy and the ORM models
# (who may import whom). The composition root: the app factory, the engine and
# sessions, the migration runner, the request dependencies, the job queue backends (they
# hold the queue's own tables and connections), and the commands that serve or migrate.
COMPOSITION_ROOT = ("service/main.py", "service/db.py", "service/migrate.py", "service/api/deps.py",
                    "service/jobs/", "service/cli/commands/server.py",
                    "service/cli/commands/database.py")


def runtime_imports(path: Path) -> set[str]:
    """Like imports(), without the `if TYPE_CHECKING:` blocks: a use case may name a row type
    a repository hands it in an annotation, but cannot reach the ORM or SQLAlchemy at run time."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            node.body = [ast.Pass()]
    out: set[str] = set()
    pkg = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from . import tables`
    return out


def test_only_repositories_touch_sqlalchemy_and_the_models():
    bad = [f"{p.relative_to(ROOT)} imports {m}" for folder in ("service", "dashboards")
           for p in files(folder) for m in sorted(runtime_imports(p))
           if m.startswith(("sqlalchemy",) + modules("models"))
           and role(p) not in ("repositories", "models")
           and not str(p.relative_to(ROOT)).startswith(COMPOSITION_ROOT)]
    assert bad == []


def test_use_cases_build_no_queries():
    """A use case hands its session to repositories; it never queries or adds rows itself."""
    words = ("select(", "session.execute(", "session.scalar", "session.query(", "session.get(",
             "session.add(", "session.delete(")
    bad = [f"{p.relative_to(ROOT)}: {w}" for p in [
        *(p for folder in ("service/usecases", "dashboards") for p in files(folder)),
        *concept_files("usecases")] for w in words if w in p.read_text()]
    assert bad == []


def test_routes_take_the_database_one_way():
    """A route gets its session (SessionDep) or, for work in the thread pool or in several units
    of work, the session factory (SessionsDep) from service/api/deps.py; it never reaches into
    the app's state for them."""
    routes = [*(ROOT / "service" / "api" / "routes").glob("*.py"), *concept_files("routes")]
    assert len(routes) > 10
    bad = [str(p.relative_to(ROOT)) for p in routes
           if "state.sessions" in p.read_text() or "state.engine" in p.read_text()]
    assert bad == []


def test_trace_files_import_downwards():
    """service/traces/ storage.py, intake.py, analysis.py: intake and the analysis runner build on storage and not on each other;
    storage knows neither, nor HTTP, the sandbox or the trace readers; none of them reaches up
    into use cases, repositories, the ORM or the routes."""
    up = ("service.usecases", "service.repositories", "service.models", "service.api",
          "sqlalchemy") + modules("routes") + modules("models") + modules("repositories")
    folder = ROOT / "service" / "traces"
    assert [f"{name} imports {m}" for name in ("storage.py", "intake.py", "analysis.py")
            for m in sorted(imports(folder / name)) if m.startswith(up)] == []
    assert [m for m in imports(folder / "storage.py")
            if m.split(".")[0] not in sys.stdlib_module_names and m != "__future__.annotations"
            ] == []
    assert [m for m in imports(folder / "intake.py") if m.startswith("service.traces.analysis")
            ] == []
    assert [m for m in imports(folder / "analysis.py") if m.startswith("service.traces.intake")
            ] == []


def module_level_imports(path: Path) -> set[str]:
    """What a module imports when it is imported: its top-level statements (module-level `if`
    and `try` blocks included), not the bodies of its functions and classes."""
    pkg = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        pkg = list(path.relative_to(ROOT).parts[:-1])
    todo: list[ast.AST] = list(ast.parse(path.read_text()).body)
    out: set[str] = set()
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            out.add(".".join(base + ([node.module] if node.module else [])))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += [n for field in ("body", "orelse", "finalbody", "handlers")
                     for n in getattr(node, field, [])]
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
    return out


def test_service_cli_imports_server_code_only_inside_commands():
    """`perfwarden collect ...` runs where only the collectors' dependencies are installed: the
    service's CLI parsers import the standard library, the collectors and each other; the
    command bodies (service/cli/commands/) import the server's code at their top and are
    loaded by `command` when the command runs. Every `command(MODULE, NAME)` names a function
    or class of an existing body module."""
    commands = ROOT / "service" / "cli" / "commands"
    parsers = [p for p in files("service/cli") if commands not in p.parents]
    bad = [f"{p.relative_to(ROOT)} imports {m}" for p in parsers
           for m in sorted(module_level_imports(p))
           if m.split(".")[0] not in sys.stdlib_module_names and m != "__future__"
           and not m.startswith(("collectors", "service.cli")) or m.startswith(COMMANDS)]
    assert bad == []
    named = [(p, m, n) for p in files("service") for m, n in _commands_named(p)]
    assert len(named) >= 12
    missing = [f"{p.relative_to(ROOT)}: command({m!r}, {n!r})" for p, m, n in named
               if not (commands / f"{m}.py").exists() or n not in {
                   d.name for d in ast.parse((commands / f"{m}.py").read_text()).body
                   if isinstance(d, (ast.FunctionDef, ast.ClassDef))}]
    assert missing == []
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, service.cli; service.cli.full_parser(); "
         "print(' '.join(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    server = ("fastapi", "starlette", "sqlalchemy", "alembic", "procrastinate", "plotly",
              "scipy", "statsmodels", "ruptures", "pydantic", "httpx", "uvicorn")
    assert [m for m in loaded if m.split(".")[0] in server
            or (m.startswith("service.") and not m.startswith("service.cli"))
            or m.startswith(COMMANDS)] == []


COMMANDS = "service.cli.commands"


def _commands_named(path: Path) -> set[tuple[str, str]]:
    """(module, name) of each `command("module", "name")` call in a file: the CLI's parsers load
    their bodies by these, so they count as the parser's imports."""
    return {(c.args[0].value, c.args[1].value) for c in ast.walk(ast.parse(path.read_text()))
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "command"
            and len(c.args) == 2 and all(isinstance(a, ast.Constant) for a in c.args)}


PROJECT = ("service", "collectors", "dashboards")


def _project_modules() -> dict[str, Path]:
    out = {}
    for pkg in PROJECT:
        for p in files(pkg):
            parts = p.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _module_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports at import time (type-checking imports included:
    a cycle through them is still two files that need each other). A submodule importing its
    own package (`from . import x`) is not an edge: the package is importing it. A CLI parser's
    `command("m", ...)` is an edge to its body module."""
    graph: dict[str, set[str]] = {}
    for name, p in mods.items():
        deps = set()
        named = {f"{COMMANDS}.{m}" for m, _ in _commands_named(p)}
        for m in module_level_imports(p) | _from_submodules(p, mods) | named:
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and m != name and not name.startswith(m + "."):
                deps.add(m)
        graph[name] = deps
    return graph


def _from_submodules(path: Path, mods: dict[str, Path]) -> set[str]:
    """`from pkg import submodule` at module level, as the submodule's name."""
    pkg = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        pkg = list(path.relative_to(ROOT).parts[:-1])
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.update(f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods)
    return out


def test_no_two_files_import_each_other():
    """Dependencies go one way: the project's modules, as they import each other when
    imported, form no cycle (graphlib names one where they do)."""
    import graphlib

    try:
        tuple(graphlib.TopologicalSorter(_module_graph(_project_modules())).static_order())
    except graphlib.CycleError as e:
        raise AssertionError(f"an import cycle: {' -> '.join(e.args[1])}") from None


def _function_level_imports() -> list[tuple[Path, int, str]]:
    """(file, line, text) of every import of a project module inside a function."""
    out = []
    for p in [p for pkg in PROJECT for p in files(pkg)]:
        src = p.read_text()
        lines = src.splitlines()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.ImportFrom) and (
                            sub.level or (sub.module or "").split(".")[0] in PROJECT) or \
                            isinstance(sub, ast.Import) and \
                            sub.names[0].name.split(".")[0] in PROJECT:
                        out.append((p, sub.lineno, lines[sub.end_lineno - 1]))
    return sorted(set(out))


def test_a_function_imports_a_project_module_only_for_a_heavy_dependency():
    """A module imports the project's modules at its top, so its dependencies show. Inside a
    function only where a heavy or optional library would come with it, with a comment on the
    line that says which (the CLI's command bodies are loaded by `command`, the rule above)."""
    found = _function_level_imports()
    silent = [f"{p.relative_to(ROOT)}:{n}: {text.strip()}" for p, n, text in found
              if "#" not in text]
    assert silent == []
    assert len(found) <= 2


SHARED = ("usecases", "repositories")  # the use cases and queries no one concept owns


def concept_graph() -> dict[str, set[str]]:
    """Concept -> the concepts its logic and queries import (a concept's folder, or the shared
    use cases and queries): imports of their tables, bodies and routes not counted."""
    folders = CONCEPTS + SHARED
    mods = {n: p for n, p in _modules().items() if n.split(".")[:2][-1] in folders
            and n.startswith("service.")}
    graph: dict[str, set[str]] = {f: set() for f in folders}
    for name, p in mods.items():
        if role(p) not in ("usecases", "repositories"):
            continue
        for m in imports(p):
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and role(mods[m]) in ("usecases", "repositories") \
                    and m.split(".")[1] != name.split(".")[1]:
                graph[name.split(".")[1]].add(m.split(".")[1])
    return graph


def test_concepts_import_one_way():
    """Between the concepts' folders, logic and queries import one way (lazy imports included):
    runs below traces and history, the gate above them, the bot above the gate.
    A concept's routes compose any concepts (only the app mounts them), and its tables and
    bodies are the one schema and vocabulary every query and answer may name."""
    import graphlib

    graph = concept_graph()
    assert len([c for c, deps in graph.items() if deps]) >= 8
    try:
        order = tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        raise AssertionError(f"concepts import each other: {' -> '.join(e.args[1])}") from None
    assert order.index("runs") < order.index("gate") < order.index("github")
    assert "runs" in graph["traces"] and "gate" in graph["github"] and "history" in graph["gate"]
