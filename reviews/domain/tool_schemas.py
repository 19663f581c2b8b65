"""The JSON schema a model is shown for a tool's arguments or an answer. Pure.

Tool and answer schemas go out with every call of a round, so what the model sees is the
compact form: definitions inlined, "X or null" shown as X (an optional field is simply not
required), no generated titles, defaults, length bounds or `additionalProperties`. Validation
is not the schema's job: the tool's own validator (pydantic's, or `parse_node_payload`) still
checks every call against the full model, bounds, defaults and unknown fields included.
A schema whose fields are all required can still go out in a provider's strict mode
(`strict_compatible`), which closes its objects again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Keywords the model needs to fill a field in: its kind, its values, its nesting, what is
# required, and a description where one was written.
_KEPT = ("description", "enum", "const", "type", "items", "properties", "required")


def compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as the model should see it (see the module's docstring)."""
    compact: dict[str, Any] = _compact(schema, schema.get("$defs", {}))
    compact.pop("description", None)  # a model's docstring: the tool's description says it
    return compact


def _compact(schema: Any, defs: Mapping[str, Any]) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    if "$ref" in schema:
        target = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1])
        if target is None:  # a reference we cannot resolve is left for the provider
            return dict(schema)
        return _compact({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, defs)
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    if "anyOf" in schema and len(branches) == 1:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
        return _compact({**branches[0], **rest}, defs)
    kept: dict[str, Any] = {}
    for key in _KEPT:
        if key not in schema:
            continue
        value = schema[key]
        if key == "type" and ("enum" in schema or "const" in schema):
            continue  # the values say the type
        if key == "items":
            value = _compact(value, defs)
        elif key == "properties":
            value = {name: _compact(sub, defs) for name, sub in value.items()}
        elif key == "required" and not value:
            continue
        kept[key] = value
    if "anyOf" in schema:
        kept["anyOf"] = [_compact(b, defs) for b in schema["anyOf"]]
    return kept


def strict_compatible(schema: Any) -> bool:
    """Whether every object in the compact `schema` requires all its properties (what a
    provider's strict mode asks)."""
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, Mapping):
        return True
    properties = schema.get("properties") or {}
    if set(properties) - set(schema.get("required") or ()):
        return False
    return all(
        strict_compatible(schema[key]) for key in ("items", "anyOf") if key in schema
    ) and all(strict_compatible(sub) for sub in properties.values())
