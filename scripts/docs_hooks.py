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


LIMITS = (("minLength", "length >= {}"), ("maxLength", "length <= {}"), ("minimum", ">= {}"),
          ("maximum", "<= {}"), ("exclusiveMinimum", "> {}"), ("exclusiveMaximum", "< {}"),
          ("pattern", "matches `{}`"))


def _schema_name(ref: dict[str, Any] | None) -> str:
    """A schema as the reference names it: a model, `string`, `integer (>= 1)`, an array of
    one, or the choices of an `anyOf` (an optional parameter: its type, the null left out, as
    `required` says whether it may be missing)."""
    if not ref:
        return ""
    if "$ref" in ref:
        return "`" + ref["$ref"].rsplit("/", 1)[-1] + "`"
    if "anyOf" in ref or "oneOf" in ref:
        kinds = [k for k in ref.get("anyOf", ref.get("oneOf", [])) if k.get("type") != "null"]
        return " or ".join(_schema_name(k) for k in kinds) or "`null`"
    if "allOf" in ref and len(ref["allOf"]) == 1:
        return _schema_name(ref["allOf"][0])
    if "enum" in ref:
        return "one of " + ", ".join(f"`{v}`" for v in ref["enum"])
    if ref.get("type") == "array":
        return "array of " + _schema_name(ref.get("items"))
    if "type" not in ref:
        raise ValueError(f"a schema the REST reference cannot name: {json.dumps(ref)[:200]}")
    limits = [fmt.format(ref[k]) for k, fmt in LIMITS if k in ref]
    return f"`{ref['type']}`" + (f" ({', '.join(limits)})" if limits else "")


def error_shape() -> str:
    """The one JSON error shape, from the model the service answers errors with."""
    from service.schemas import ErrorOut

    body = ErrorOut.model_json_schema()["$defs"]["ErrorBody"]["properties"]
    def named(spec: dict[str, Any]) -> str:
        null = any(k.get("type") == "null" for k in spec.get("anyOf", []))
        return _schema_name(spec).replace("`", "") + (" or null" if null else "")

    fields = ", ".join(f'"{name}": {named(spec)}' for name, spec in body.items())
    return (f"Every error, on every route: `{{\"error\": {{{fields}}}}}` (`field`: the request "
            "field at fault, where there is one).\n")


def rest_reference() -> str:
    from service.config import Settings
    from service.main import create_app

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite:///{tmp}/docs.db", data_dir=Path(tmp) / "data")
        doc = create_app(settings, sites=()).openapi()  # the pages are in no schema
    lines = [f"OpenAPI {doc['openapi']}, `{doc['info']['title']}` {doc['info']['version']}. "
             "The full document is served at `/openapi.json`, browsable at `/docs`.\n",
             error_shape()]
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
