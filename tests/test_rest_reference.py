"""The REST reference (scripts/docs_hooks.py, run by `mkdocs build --strict` in CI) says what the
service does: the error shape it really answers with, and a type for every parameter."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from service.config import Settings
from service.main import create_app
from tests.conftest import LOCAL

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import docs_hooks  # noqa: E402 - a script of the docs build, not a package


def test_the_documented_error_shape_is_the_one_the_service_answers(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path}/t.db", data_dir=tmp_path / "data")
    with TestClient(create_app(settings), **LOCAL) as c:  # a loopback client, as the CLI is
        r = c.get("/api/v1/runs", params={"limit": "many"})
    assert r.status_code == 422
    said = re.search(r'\{"error": \{(.*?)\}\}', docs_hooks.error_shape()).group(1)
    assert [f.split(":")[0].strip('"') for f in said.split(", ")] == list(r.json()["error"])
    assert r.json()["error"]["field"] == "limit"
    assert r.json()["error"]["status"] == 422


def test_every_parameter_has_a_type():
    text = docs_hooks.rest_reference()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(rows) > 40
    kinds = [ln.rsplit("|", 2)[-2].strip() for ln in rows]
    assert all(k and k != "`object`" for k in kinds), [r for r, k in zip(rows, kinds)
                                                      if k == "`object`"]
    assert re.search(r"\| `limit` \| query \| no \| `integer` \(>= 1, <= \d+\) \|", text)


def test_a_schema_without_a_type_stops_the_build():
    try:
        docs_hooks._schema_name({"description": "no type"})
    except ValueError as e:
        assert "cannot name" in str(e)
    else:
        raise AssertionError("an untyped schema passed")


def test_each_route_lists_the_errors_it_can_answer(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path}/t.db", data_dir=tmp_path / "data")
    paths = create_app(settings).openapi()["paths"]

    def codes(method: str, path: str) -> set[str]:
        return {k for k in paths[path][method]["responses"] if k[0] in "45"}

    assert codes("get", "/api/v1/runs/{run_id}") == {"401", "404", "422"}  # a read: no body
    assert "503" in codes("get", "/api/v1/changepoints")  # a heavy read's lane may be full
    assert {"409", "413", "415", "507"} <= codes("post", "/api/v1/baselines")  # exists already
    assert "409" not in codes("put", "/api/v1/baselines/{benchmark}/{name}")
    assert "409" in codes("delete", "/api/v1/curations/{curation_id}")  # withdrawn already
    assert codes("get", "/api/v1/health") == {"503"}
    assert len({frozenset(codes(m, p)) for p, ops in paths.items() for m in ops}) >= 6
