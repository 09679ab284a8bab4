"""What a file of the service is, by where it lives: the layout's rules (test_layering.py,
test_seams.py) hold for a role, wherever its files are. A concept's folder (service/alerts/)
holds all of one concept: its routes (routes.py), request and response bodies (schemas.py),
tables (tables.py), queries and row writes (queries.py; a second one queries_WHAT.py) and its logic (every other module, the
concept's use cases). The folders sorted by kind hold one role each."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONCEPTS = ("alerts", "attribution", "baselines", "curations", "experiments", "explain", "gate",
            "github", "history", "jobs", "runs", "traces")  # folders under service/
BY_NAME = {"routes.py": "routes", "schemas.py": "schemas", "tables.py": "models",
           "queries.py": "repositories", "__init__.py": "package"}
BY_FOLDER = {"service/usecases/": "usecases", "service/repositories/": "repositories",
             "service/models/": "models", "service/schemas/": "schemas",
             "service/api/routes/": "routes"}


def role(path: Path) -> str:
    """usecases, repositories, models, schemas, routes, package (a concept's __init__), or
    other."""
    rel = path.relative_to(ROOT).as_posix()
    if any(rel.startswith(f"service/{c}/") for c in CONCEPTS):
        stem = path.name.partition("_")[0].removesuffix(".py") + ".py"
        return BY_NAME.get(path.name, BY_NAME.get(stem, "usecases"))
    return next((r for folder, r in BY_FOLDER.items() if rel.startswith(folder)), "other")


def modules(kind: str) -> tuple[str, ...]:
    """The dotted prefixes of the modules of a role (repositories, models or routes)."""
    folder = {v: k for k, v in BY_FOLDER.items()}[kind].rstrip("/").replace("/", ".")
    name = {v: k for k, v in BY_NAME.items()}[kind].removesuffix(".py")
    return (folder,) + tuple(f"service.{c}.{name}" for c in CONCEPTS)


def concept_files(kind: str) -> list[Path]:
    """The files of a role in the concepts' folders."""
    return [p for c in CONCEPTS for p in sorted((ROOT / "service" / c).glob("*.py"))
            if role(p) == kind]
