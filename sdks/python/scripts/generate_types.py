"""Generates ``src/pixgw/types.py`` from the OpenAPI document of a running gateway.

    python scripts/generate_types.py            writes the file
    python scripts/generate_types.py --check    exits 1 when the checked-in file is stale

Each schema of ``components.schemas`` becomes a ``TypedDict`` (or a ``Literal`` alias for a
string enum): the objects the API answers, typed for editors and mypy, plain dicts at run time.
The gateway is ``$PIXGW_URL``, or the one ``cargo xtask demo`` wrote into target/demo/demo.env.
"""

from __future__ import annotations

import json
import keyword
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "src" / "pixgw" / "types.py"

HEADER = '''"""The API's objects, generated from the gateway's OpenAPI document (``GET /v1/openapi.json``)
by ``scripts/generate_types.py``. Do not edit: regenerate; a test fails when this file is stale.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


'''


def gateway_url() -> str:
    if url := os.environ.get("PIXGW_URL"):
        return url
    demo_env = ROOT.parent.parent / "target" / "demo" / "demo.env"
    if demo_env.exists():
        for line in demo_env.read_text().splitlines():
            if line.startswith("PIXGW_URL="):
                return line.removeprefix("PIXGW_URL=").strip()
    sys.exit("No gateway to read the OpenAPI document from: set PIXGW_URL, or run `cargo xtask demo`.")


def fetch_document(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(base_url.rstrip("/") + "/v1/openapi.json", timeout=30) as response:
        return json.load(response)


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def annotation(schema: dict[str, Any]) -> str:
    """The Python type of a JSON schema, as source text."""
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    for combinator in ("oneOf", "anyOf"):
        if combinator in schema:
            return union([annotation(s) for s in schema[combinator]])
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return annotation(schema["allOf"][0])
    if "enum" in schema:
        values = [json.dumps(v) if v is not None else "None" for v in schema["enum"]]
        literals = [v for v in values if v != "None"]
        parts = [f"Literal[{', '.join(literals)}]"] if literals else []
        if "None" in values:
            parts.append("None")
        return union(parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return union([annotation({**schema, "type": k}) for k in kind])
    if kind == "string":
        return "str"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{annotation(schema.get('items', {}))}]"
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        extra = schema.get("additionalProperties")
        value = annotation(extra) if isinstance(extra, dict) and extra else "Any"
        return f"dict[str, {value}]"
    return "Any"


def union(parts: list[str]) -> str:
    unique: list[str] = []
    for part in parts:
        if part not in unique:
            unique.append(part)
    if "Any" in unique:
        return "Any"
    return " | ".join(unique) if unique else "Any"


def docstring(text: str | None, indent: str) -> str:
    if not text:
        return ""
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")
    return f'{indent}"""{text}"""\n'


def render(document: dict[str, Any]) -> str:
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    out = [HEADER]
    for name in sorted(schemas):
        schema = schemas[name]
        properties: dict[str, Any] | None = schema.get("properties")
        if properties is None:
            out.append(f"{name} = {annotation(schema)}\n")
            if schema.get("description"):
                out.append(docstring(schema["description"], ""))
            out.append("\n\n")
            continue
        required = set(schema.get("required", []))
        fields = []
        for prop in sorted(properties):
            kind = annotation(properties[prop])
            fields.append((prop, kind if prop in required else f"NotRequired[{kind}]", properties[prop]))
        if any(keyword.iskeyword(p) or not p.isidentifier() for p, _, _ in fields):
            # Keys that cannot be class attributes: the functional form.
            body = ", ".join(f"{json.dumps(p)}: {k}" for p, k, _ in fields)
            out.append(f"{name} = TypedDict({json.dumps(name)}, {{{body}}})\n\n\n")
            continue
        out.append(f"class {name}(TypedDict):\n")
        out.append(docstring(schema.get("description"), "    "))
        if not fields:
            out.append("    pass\n")
        for prop, kind, prop_schema in fields:
            out.append(f"    {prop}: {kind}\n")
            out.append(docstring(prop_schema.get("description"), "    "))
        out.append("\n\n")
    out.append("__all__ = [\n" + "".join(f"    {json.dumps(n)},\n" for n in sorted(schemas)) + "]\n")
    return "".join(out)


def main() -> None:
    url = gateway_url()
    generated = render(fetch_document(url))
    if "--check" in sys.argv:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != generated:
            sys.exit(
                f"src/pixgw/types.py is not what {url}/v1/openapi.json describes: the API changed. "
                "Run `python scripts/generate_types.py` in sdks/python against the current gateway "
                "and commit the result."
            )
        print(f"src/pixgw/types.py matches {url}/v1/openapi.json")
    else:
        TARGET.write_text(generated)
        print(f"wrote src/pixgw/types.py from {url}/v1/openapi.json")


if __name__ == "__main__":
    main()
