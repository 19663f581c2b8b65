"""Whether a changed TypeScript type breaks its users, as far as the text can tell (pure).

Without a type checker the axis cannot evaluate `LiteralUnion<…, string>` or an imported
name, so it only decides what the text settles and says "unknown" for the rest:

- a union compared member by member: where callers pass the value (a parameter), a union
  that keeps every old member accepts every old call; where they receive it (a result), one
  that adds none returns nothing new. A type alias or an object type can be either, so it
  must keep exactly its members to be safe, and only when every member is a primitive or a
  literal can the text prove a break;
- an object type compared member by member: a member removed, or made required, breaks; an
  optional member added does not; a member whose type changed is judged by the same rules;
- `T[]` by its element type.

Judgements, from safest: same < compatible < unknown < breaking.
"""

from __future__ import annotations

import re
from typing import Literal

Position = Literal["input", "output", "both"]
Judgement = Literal["same", "compatible", "unknown", "breaking"]
_ORDER: dict[str, int] = {"same": 0, "compatible": 1, "unknown": 2, "breaking": 3}
_PRIMITIVE = re.compile(
    r"""^(?:string|number|boolean|bigint|symbol|object|null|undefined|void|never|unknown|any
    |true|false|-?\d+(?:\.\d+)?|'[^']*'|"[^"]*"|`[^`$]*`)$""",
    re.X,
)
_MEMBER = re.compile(r"^(?:readonly\s+)?([\w$]+|'[^']*'|\"[^\"]*\")(\?)?\s*:\s*(.+)$", re.S)


def worst(*judgements: Judgement) -> Judgement:
    return max(judgements, key=_ORDER.__getitem__, default="same")


def judge(old: str, new: str, position: Position) -> Judgement:
    old, new = old.strip(), new.strip()
    if old == new:
        return "same"
    if old.endswith("[]") and new.endswith("[]"):
        return judge(old[:-2], new[:-2], position)
    old_members, new_members = _object_members(old), _object_members(new)
    if old_members is not None and new_members is not None:
        return _judge_objects(old_members, new_members, position)
    return _judge_unions(_split(old, "|"), _split(new, "|"), position)


def _judge_unions(old: list[str], new: list[str], position: Position) -> Judgement:
    before, after = set(old), set(new)
    primitive = all(_PRIMITIVE.match(m) for m in before | after)
    keeps, adds = before <= after, not after <= before
    if position == "input" and keeps:
        return "compatible"
    if position == "output" and not adds:
        return "compatible"
    if primitive:
        return "breaking"
    return "unknown"


def _judge_objects(
    old: dict[str, tuple[bool, str]], new: dict[str, tuple[bool, str]], position: Position
) -> Judgement:
    found: list[Judgement] = ["compatible"]
    for name, (optional, typ) in old.items():
        if name not in new:
            found.append("breaking")
            continue
        new_optional, new_type = new[name]
        if optional and not new_optional and position != "output":
            found.append("breaking")
        found.append(judge(typ, new_type, position))
    for name, (optional, _) in new.items():
        if name not in old and not optional and position != "output":
            found.append("breaking")  # a value built by a caller now lacks it
    return worst(*found)


def _object_members(text: str) -> dict[str, tuple[bool, str]] | None:
    """`{a?: T, b: U}` (as the canonical writer spells it) → {name: (optional, type)}; None
    for anything else, or a member this reader does not know (a method, an index)."""
    if not (text.startswith("{") and text.endswith("}")):
        return None
    out: dict[str, tuple[bool, str]] = {}
    for part in _split(text[1:-1], ","):
        if not part:
            continue
        member = _MEMBER.match(part)
        if member is None:
            return None
        out[member.group(1)] = (bool(member.group(2)), member.group(3).strip())
    return out


def _split(text: str, separator: str) -> list[str]:
    """Top-level parts of `text` between `separator`s (not inside brackets or quotes)."""
    parts, depth, current, quote = [], 0, "", ""
    for char in text:
        arrow = char == ">" and current.endswith("=")  # `=>` closes nothing
        if quote:
            current += char
            if char == quote:
                quote = ""
            continue
        if char in "'\"`":
            quote = char
        elif char in "([{<":
            depth += 1
        elif char in ")]}>" and not arrow:
            depth -= 1
        if char == separator and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [p for p in parts if p] if separator == "|" else parts
