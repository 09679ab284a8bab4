"""MkDocs hooks: the CLI reference from the `perfwarden` parser, the REST reference from the
app's OpenAPI document, and the repository's spec files, so the site cannot drift from the code."""
from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_MARK = re.compile(r"<!-- perfwarden:(cli|rest|include (\S+)) -->")


def _subcommands(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, str]]:
    out = [(path, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += _subcommands(child, f"{path} {name}")
    return out


def cli_reference() -> str:
    import os

    from service.cli import full_parser

    os.environ["COLUMNS"] = "100"
    parts = []
    for path, text in _subcommands(full_parser(), "perfwarden"):
        level = "##" if path.count(" ") <= 1 else "###"
        parts.append(f"{level} `{path}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


def _schema_name(ref: dict[str, Any] | None) -> str:
    if not ref:
        return ""
    if "$ref" in ref:
        return "`" + ref["$ref"].rsplit("/", 1)[-1] + "`"
    if ref.get("type") == "array":
        return "array of " + _schema_name(ref.get("items"))
    return f"`{ref.get('type', 'object')}`"


def rest_reference() -> str:
    from service.config import Settings
    from service.main import create_app

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite:///{tmp}/docs.db", data_dir=Path(tmp) / "data")
        doc = create_app(settings).openapi()
    lines = [f"OpenAPI {doc['openapi']}, `{doc['info']['title']}` {doc['info']['version']}. "
             "The full document is served at `/openapi.json`, browsable at `/docs`.\n"]
    for path, ops in sorted(doc["paths"].items()):
        for method, op in ops.items():
            lines.append(f"## `{method.upper()} {path}`\n")
            if op.get("summary"):
                lines.append(op["summary"] + "\n")
            if op.get("description"):
                lines.append(op["description"].strip() + "\n")
            params = op.get("parameters", [])
            if params:
                lines.append("| parameter | in | required | type |\n|---|---|---|---|")
                for prm in params:
                    lines.append(f"| `{prm['name']}` | {prm['in']} | "
                                 f"{'yes' if prm.get('required') else 'no'} | "
                                 f"{_schema_name(prm.get('schema'))} |")
                lines.append("")
            body = op.get("requestBody", {}).get("content", {})
            for ctype, spec in body.items():
                lines.append(f"Body: `{ctype}` {_schema_name(spec.get('schema'))}\n")
            codes = ", ".join(f"`{c}`" for c in op.get("responses", {}))
            lines.append(f"Responses: {codes}\n")
    schemas = doc.get("components", {}).get("schemas", {})
    lines.append("## Schemas\n")
    for name, schema in sorted(schemas.items()):
        lines.append(f"### `{name}`\n\n```json\n{json.dumps(schema, indent=1)[:4000]}\n```\n")
    return "\n".join(lines)


def _replace(match: re.Match[str]) -> str:
    if match.group(1) == "cli":
        return cli_reference()
    if match.group(1) == "rest":
        return rest_reference()
    text = (ROOT / match.group(2)).read_text()
    return re.sub(r"^#", "##", text, flags=re.M)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _MARK.sub(_replace, markdown)
