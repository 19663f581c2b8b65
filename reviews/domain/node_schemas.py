"""The JSON schemas of a finding as a model is offered it: the flat `add_review_node` tool schema
(reasoning first, every enum spelled out) and the nested form, compacted to the terse shape a
prompt can afford. Kept apart from nodes, which validates payloads, so the schema a model sees
and the rules that judge its answer stay readable on their own.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from reviews.domain.nodes import FLAGS, TITLE_MAX, NodePayload

from .types import (
    Category,
    Dimension,
    Effort,
    NodeType,
    RequirementGap,
    Severity,
    Side,
)


def _values(kind: type[StrEnum]) -> list[str]:
    return [member.value for member in kind]


def node_tool_schema() -> dict[str, Any]:
    """JSON schema of the `add_review_node` arguments models are shown: the flat form,
    `reasoning` first. It goes out with every reviewer call, so it says what a model could not
    guess from the names and enums and no more: what the system prompt and the brief say
    (head-version lines, `map_anchor`, the requirements rules) is not repeated, nor the title's
    limit, which a rejection states. `lift_flat_payload` makes it a `NodePayload`, whose
    validation enforces the rest; unknown fields are refused."""
    text: dict[str, Any] = {"type": "string"}
    line: dict[str, Any] = {"type": "integer"}
    properties: dict[str, Any] = {
        "reasoning": text,
        "type": {"enum": _values(NodeType)},
        "severity": {"description": "critical = P0 ... low = P3", "enum": _values(Severity)},
        "category": {"enum": _values(Category)},
        "effort": {"enum": _values(Effort)},
        "flags": {"type": "array", "items": {"enum": list(FLAGS)}},
        "path": {"description": "omit for a PR-wide finding", "type": "string"},
        "start_line": line,
        "end_line": line,
        "side": {"description": "LEFT = base version", "enum": _values(Side)},
        "fix_lines": {
            "description": "replace the anchored lines",
            "type": "array",
            "items": text,
        },
        # The report's suggested fix and a coding agent's prompt (MCP) when no exact lines are.
        "fix_prompt": {"description": "else how to fix it", "type": "string"},
        "confidence": {"description": "0 to 1", "type": "number"},
        "title": text,
        "body": text,
        "map_anchor": text,
        "cross_notes": {
            "description": "|".join(_values(Dimension)) + ": note",
            "type": "array",
            "items": text,
        },
        "requirement_gap": {"enum": _values(RequirementGap)},
    }
    required = ["type", "severity", "category", "effort", "confidence", "title", "body"]
    schema = {"type": "object", "properties": properties, "required": required}
    # Fresh dicts throughout: `text` and `line` are shared above, and callers may edit theirs.
    return copy.deepcopy({**schema, "additionalProperties": False})


# The nested schema's only descriptions, keyed by field path (see `nested_node_schema`).
_TERSE = {
    "priority": "P0 critical … P3 nit",
    "anchor": "omit for a PR-wide finding",
    "anchor.side": "LEFT = base version",
    "fix.replacement_lines": "replace the anchored lines",
    "fix.fix_prompt": "for a coding agent",
    "confidence": "0 to 1",
    "title": f"at most {TITLE_MAX} characters",
    "triage.functional_effect": "false when no behaviour changes",
}


def nested_node_schema() -> dict[str, Any]:
    """JSON schema of the nested form, `NodePayload` itself, `reasoning` first: what the MCP
    server's `add_review_node` shows (an outside agent may give a diff or a fix prompt).
    Compact: definitions inlined, no titles, defaults or nullable branches, and only the
    descriptions in `_TERSE`. Unknown fields are still refused, by the schema and by
    `parse_node_payload`."""
    full = NodePayload.model_json_schema()
    schema: dict[str, Any] = _compact(full, full.get("$defs", {}), "")
    schema["additionalProperties"] = False
    return schema


def _compact(schema: Any, defs: Mapping[str, Any], where: str) -> Any:
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _compact(defs[schema["$ref"].rsplit("/", 1)[1]], defs, where)
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    if len(branches) == 1:  # "X or null": optional fields are simply not required
        return _compact(branches[0], defs, where)
    kept: dict[str, Any] = {}
    if "enum" in schema:
        kept["enum"] = schema["enum"]
    elif "type" in schema:
        kept["type"] = schema["type"]
    if "items" in schema:
        kept["items"] = _compact(schema["items"], defs, f"{where}[]")
    if "properties" in schema:
        kept["properties"] = {
            name: _compact(sub, defs, f"{where}.{name}".lstrip("."))
            for name, sub in schema["properties"].items()
        }
        if schema.get("required"):
            kept["required"] = schema["required"]
    if where in _TERSE:
        kept["description"] = _TERSE[where]
    return kept
