"""The `add_review_node` payload and its validation.

`parse_node_payload` never raises: a reviewer's tool call either becomes an `Accepted` node or a
`Rejected` value whose reason is precise enough to send back to the agent and to count in the
round's statistics ("a malformed payload creates no node", docs/domain-rules.md#findings-as-data).

Decisions:
- An anchor whose path is unsafe (absolute, `..`, NUL, backslash), not in the head checkout, or
  whose lines run past the end of the file REJECTS the whole node. A finding pointing nowhere
  would be published at a wrong place (publishing re-checks anchors too, but by then the reviewer
  can no longer fix its call). Harmless spellings (`./a.py`, `a//b.py`) are normalised, not
  rejected.
- The end-of-file check applies to `side=RIGHT` anchors only: `file_lines` describes the head
  checkout, and a LEFT anchor points into the base version.
- Unknown fields are rejected: the tool schema is closed, and a misspelt field (`confidance`)
  silently dropped would hide a reviewer bug.
- Scalars are strict (no `"0.8"` for a number, no `true` for a line); enum values are the
  lowercase/`P0` strings of the schema.
- Models are shown a flat form (`node_tool_schema`): one level of fields, `severity` standing
  for the priority, boolean facts as `flags`, the anchor's and fix's fields at the top, cross-notes
  as "dimension: note" strings. It costs about 170 fewer tokens on every reviewer call than the
  nested `NodePayload` shape, which `lift_flat_payload` turns it into before validation. The
  nested form is still accepted (MCP clients, whose schema shows it, and models on a bad day); a
  payload mixing the two is rejected, each nested object named with the flat fields to use.
- Every text of an accepted node (reasoning, title, body, fix, cross-notes) and every rejection
  reason goes through the same redaction as model inputs (reviews/domain/redaction.py): what is
  stored is shown, published and exported, so a secret a reviewer or tool quotes stops here.
  Replacement lines that held a secret are dropped rather than redacted: a one-click
  suggestion would commit either the secret or the marker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from reviews.domain.redaction import redact, redact_text

from .types import (
    Category,
    Dimension,
    Effort,
    NodeType,
    NodeView,
    Priority,
    RequirementGap,
    Severity,
    Side,
    priority_for_severity,
)

TITLE_MAX = 200
#: Caps on a finding's free text, in characters: a finding is read by people, and whatever a
#: client sends is stored and shown, so nothing is unbounded (the API and MCP state them).
TEXT_CAPS: dict[str, int] = {
    "body": 20_000,
    "reasoning": 20_000,
    "fix.fix_prompt": 10_000,
    "fix.diff": 50_000,
    "fix.replacement_lines": 20_000,  # all lines together
    "map_anchor": 500,
}

StrictStr = Annotated[str, Field(strict=True)]
LineNumber = Annotated[int, Field(strict=True)]

FileLines = Mapping[str, int] | Callable[[str], int | None]
"""Line counts of the head checkout: a mapping path → count, or a callable returning None for a
path that does not exist."""

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


def normalise_anchor_path(raw: str) -> str:
    """Return the canonical repository-relative spelling of `raw`, or raise ValueError.

    The worktree is the reviewers' sandbox: an anchor must not name anything outside it.
    """
    if raw == "" or raw.strip() == "":
        raise ValueError("must not be empty")
    if any(ord(ch) < 32 for ch in raw):
        raise ValueError("contains a control character (NUL or newline)")
    if "\\" in raw:
        raise ValueError(f"use forward slashes (got {raw!r})")
    if raw.startswith("/") or _WINDOWS_DRIVE.match(raw) or raw.startswith("~"):
        raise ValueError(f"must be relative to the repository root (got {raw!r})")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ValueError("escapes the worktree")
    if not parts or raw.endswith("/"):
        raise ValueError(f"must name a file, not a directory (got {raw!r})")
    return "/".join(parts)


def _custom(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Triage(_Closed):
    category: Category = Field(description="What kind of problem this is.")
    severity: Severity = Field(description="How bad it is if it ships.")
    effort: Effort = Field(description="How much work the fix is.")
    # Severity floors need facts only the reviewer knows; all default to the lenient side.
    exploitable_externally: Annotated[bool, Field(strict=True)] = Field(
        default=False, description="Security only: an external user can exploit it."
    )
    hot_path: Annotated[bool, Field(strict=True)] = Field(
        default=False, description="Performance only: the code runs on a hot path."
    )
    critical_path: Annotated[bool, Field(strict=True)] = Field(
        default=False, description="Testing only: the untested code is on a critical path."
    )
    functional_effect: Annotated[bool, Field(strict=True)] = Field(
        default=True, description="Style only: false when the issue changes no behaviour."
    )


class Anchor(_Closed):
    path: StrictStr = Field(description="Repository-relative path in the head checkout.")
    start_line: LineNumber = Field(description="First line (1-based).")
    end_line: LineNumber = Field(description="Last line (1-based, >= start_line).")
    side: Side = Field(default=Side.RIGHT, description="RIGHT = head version, LEFT = base.")

    @field_validator("path")
    @classmethod
    def _safe_path(cls, value: str) -> str:
        try:
            return normalise_anchor_path(value)
        except ValueError as exc:
            raise _custom("unsafe_path", str(exc)) from None

    @field_validator("start_line", "end_line")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise _custom("line_number", f"must be 1 or more (got {value})")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Anchor:
        if self.start_line > self.end_line:
            raise _custom(
                "line_order",
                f"start_line {self.start_line} is after end_line {self.end_line}",
            )
        return self


class Fix(_Closed):
    # Only exact replacement lines ever become a one-click GitHub suggestion.
    replacement_lines: list[StrictStr] | None = Field(
        default=None, description="Exact lines replacing the anchored range."
    )
    diff: StrictStr | None = Field(default=None, description="A unified diff.")
    fix_prompt: StrictStr | None = Field(
        default=None, description="Instructions a coding agent can follow to fix it."
    )

    @field_validator("diff", "fix_prompt")
    @classmethod
    def _capped(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _cap(value, f"fix.{info.field_name}")

    @field_validator("replacement_lines")
    @classmethod
    def _capped_lines(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            _cap("\n".join(value), "fix.replacement_lines")
        return value


def _cap(value: str | None, field: str) -> str | None:
    limit = TEXT_CAPS[field]
    if value is not None and len(value) > limit:
        raise _custom("too_long", f"must be at most {limit:,} characters (got {len(value):,})")
    return value


class CrossNote(_Closed):
    """An observation outside the reviewer's own dimension, routed by the lead pass."""

    dimension: Dimension
    note: StrictStr = Field(min_length=1)


class NodePayload(_Closed):
    """One finding. Field order is the tool schema's order: reasoning comes first so the model
    writes its analysis before committing to a priority."""

    reasoning: StrictStr | None = Field(
        default=None, description="Your analysis, written before the finding."
    )
    type: NodeType
    priority: Priority = Field(description="P0 critical … P3 nit.")
    triage: Triage
    anchor: Anchor | None = Field(default=None, description="Omit for a PR-wide finding.")
    fix: Fix | None = None
    confidence: Annotated[float, Field(strict=True)] = Field(
        description="How sure you are the finding is real, 0 to 1."
    )
    title: StrictStr = Field(description=f"Short title, 1 to {TITLE_MAX} characters.")
    body: StrictStr = Field(description="Markdown explanation.")
    map_anchor: StrictStr | None = Field(
        default=None, description="Id of the change-map anchor this finding cites."
    )
    cross_notes: list[CrossNote] | None = None
    requirement_gap: RequirementGap | None = Field(
        default=None,
        description="Requirements reviewer only: how the finding departs from the original "
        "request (missing_feature, misinterpretation, partial_implementation, scope_creep).",
    )

    @field_validator("confidence")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        if not (0.0 <= value <= 1.0):  # also rejects NaN
            raise _custom("confidence_range", f"must be between 0 and 1 (got {value})")
        return value

    @field_validator("body", "reasoning", "map_anchor")
    @classmethod
    def _capped(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _cap(value, str(info.field_name))

    @field_validator("title")
    @classmethod
    def _title_length(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise _custom("title_empty", "must not be empty")
        if len(stripped) > TITLE_MAX:
            raise _custom(
                "title_length", f"must be at most {TITLE_MAX} characters (got {len(stripped)})"
            )
        return stripped


@dataclass(frozen=True, slots=True)
class Accepted:
    node: NodePayload


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: str
    problems: tuple[str, ...]


def parse_node_payload(raw: object, *, file_lines: FileLines | None = None) -> Accepted | Rejected:
    """Validate a tool call's arguments (a dict or its JSON text), in the flat form models are
    shown or the nested one. Never raises."""
    if isinstance(raw, bytes | str):
        try:
            raw = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            return _rejected([f"payload: not valid JSON ({exc})"])
    if not isinstance(raw, Mapping):
        return _rejected([f"payload: must be an object (got {type(raw).__name__})"])
    try:
        lifted = lift_flat_payload(raw)
        node = NodePayload.model_validate(lifted.payload)
    except ValidationError as exc:
        problems = [_describe(error, flat=lifted.flat) for error in exc.errors()]
        return _rejected([*lifted.problems, *(p for p in problems if p)])
    except Exception as exc:  # the contract is "never raises"
        return _rejected([f"payload: could not be validated ({type(exc).__name__})"])
    if lifted.problems:
        return _rejected(list(lifted.problems))
    if node.anchor is not None and file_lines is not None and node.anchor.side is Side.RIGHT:
        problem = _check_against_checkout(node.anchor, file_lines, flat=lifted.flat)
        if problem:
            return _rejected([problem])
    return Accepted(redact_payload(node))


# -- the flat form -------------------------------------------------------------------------------

#: The flat form's `flags`, each the `Triage` fact it sets.
FLAGS: dict[str, tuple[str, bool]] = {
    "exploitable_externally": ("exploitable_externally", True),
    "hot_path": ("hot_path", True),
    "critical_path": ("critical_path", True),
    "no_functional_effect": ("functional_effect", False),
}
_TRIAGE_FIELDS = ("category", "severity", "effort")
_ANCHOR_FIELDS = ("path", "start_line", "end_line", "side")
#: Fields only the flat form has.
FLAT_ONLY = frozenset({*_TRIAGE_FIELDS, "flags", *_ANCHOR_FIELDS, "fix_lines", "fix_prompt"})
_NESTED_ONLY = ("triage", "anchor", "fix")
_SEVERITIES = frozenset(s.value for s in Severity)

# A nested field's name in the flat form, so that a flat payload's rejection names its own
# fields. The anchor's own check (start after end) is reported on `end_line`.
_FLAT_NAME: dict[tuple[str, ...], str] = {
    **{("triage", name): name for name in _TRIAGE_FIELDS},
    **{("anchor", name): name for name in _ANCHOR_FIELDS},
    ("anchor",): "end_line",
    ("fix", "replacement_lines"): "fix_lines",
    ("fix", "fix_prompt"): "fix_prompt",
}
# What to send instead of a nested object or field in a flat payload.
_INSTEAD = {
    "triage": "give category, severity, effort and flags as fields of their own",
    "anchor": "give path, start_line, end_line and side as fields of their own",
    "fix": "give the exact replacement lines as fix_lines, or how to fix it as fix_prompt",
    "replacement_lines": "use fix_lines",
    "diff": "give the exact replacement lines as fix_lines, or how to fix it as fix_prompt",
    "functional_effect": 'list "no_functional_effect" in flags when no behaviour changes',
    **{flag: "list it in flags" for flag in FLAGS if flag != "no_functional_effect"},
}


@dataclass(frozen=True, slots=True)
class Lifted:
    """A payload as `NodePayload` takes it. `flat`: it came in the flat form, so rejections
    name the flat fields; `problems`: what the lifting itself refused."""

    payload: dict[str, Any]
    flat: bool
    problems: tuple[str, ...] = ()


def lift_flat_payload(raw: Mapping[str, Any]) -> Lifted:
    """The nested `NodePayload` input for a payload in the flat form `node_tool_schema` shows.
    Pure; validates nothing `NodePayload` checks itself.

    A payload is nested when it has `triage`, `anchor`, `fix` or `priority` and no field only
    the flat form has: it comes back as it is. Otherwise it is flat, and a nested object in it is
    refused with the flat fields to use. `priority`, not shown, is taken when given (it may
    differ from the severity); absent, it is the severity's (critical P0 … low P3). An anchor is
    made when `path` or a line is given (`side` alone anchors nothing); null counts as absent
    there, as it does for the nested `anchor`. A cross-note "dimension: note" becomes
    `{dimension, note}` (one space after the colon dropped); an object is kept as it is.
    """
    keys = set(raw)
    if not keys & FLAT_ONLY and keys & {*_NESTED_ONLY, "priority"}:
        return Lifted(dict(raw), flat=False)
    problems: list[str] = []
    payload = {key: value for key, value in raw.items() if key not in FLAT_ONLY}
    for key in _NESTED_ONLY:
        if key in payload:
            del payload[key]
            problems.append(f"{key}: not with the flat fields; {_INSTEAD[key]}")
    triage = {name: raw[name] for name in _TRIAGE_FIELDS if name in raw}
    flags = raw.get("flags")
    if flags is not None and not isinstance(flags, list):
        problems.append(f"flags: must be a list (got {_show(flags)})")
    for flag in flags if isinstance(flags, list) else ():
        if isinstance(flag, str) and flag in FLAGS:
            fact, value = FLAGS[flag]
            triage[fact] = value
        else:
            problems.append(f"flags: must be one of {_one_of(FLAGS)} (got {_show(flag)})")
    payload["triage"] = triage
    severity = raw.get("severity")
    if payload.get("priority") is None:
        payload.pop("priority", None)
        if isinstance(severity, str) and severity in _SEVERITIES:
            payload["priority"] = priority_for_severity(Severity(severity)).value
    anchor = {name: raw[name] for name in _ANCHOR_FIELDS if raw.get(name) is not None}
    if set(anchor) - {"side"}:
        payload["anchor"] = anchor
    fix = {
        nested: raw[name]
        for name, nested in (("fix_lines", "replacement_lines"), ("fix_prompt", "fix_prompt"))
        if raw.get(name) is not None
    }
    if fix:
        payload["fix"] = fix
    notes = payload.get("cross_notes")
    if isinstance(notes, list):
        payload["cross_notes"] = [_lift_note(note) for note in notes]
    return Lifted(payload, flat=True, problems=tuple(problems))


def _lift_note(note: Any) -> Any:
    if not isinstance(note, str):
        return note
    head, colon, text = note.partition(":")
    if not colon:  # validation says the dimension is missing
        return {"note": note}
    return {"dimension": head.strip().lower(), "note": text.removeprefix(" ")}


def _one_of(values: Any) -> str:
    shown = [repr(str(v)) for v in values]
    return ", ".join(shown[:-1]) + f" or {shown[-1]}"


def redact_payload(node: NodePayload) -> NodePayload:
    """`node` with every free text redacted (idempotent: a redacted payload comes back equal)."""
    changes: dict[str, Any] = {}
    if node.reasoning:
        changes["reasoning"] = redact_text(node.reasoning)
    title = redact_text(node.title)
    if title != node.title:
        changes["title"] = title[:TITLE_MAX].strip() or "[REDACTED]"
    changes["body"] = redact_text(node.body)
    if node.fix is not None:
        fix = node.fix
        lines = fix.replacement_lines
        if lines is not None and any(redact(line)[1] for line in lines):
            lines = None
        changes["fix"] = fix.model_copy(
            update={
                "replacement_lines": lines,
                "diff": redact_text(fix.diff) if fix.diff else fix.diff,
                "fix_prompt": redact_text(fix.fix_prompt) if fix.fix_prompt else fix.fix_prompt,
            }
        )
    if node.map_anchor:
        changes["map_anchor"] = redact_text(node.map_anchor)
    if node.cross_notes:
        changes["cross_notes"] = [
            n.model_copy(update={"note": redact_text(n.note)}) for n in node.cross_notes
        ]
    return node.model_copy(update=changes)


def node_view_from_payload(
    payload: NodePayload, *, node_id: str, agent: str, stream: str = ""
) -> NodeView:
    """The rules' view of a freshly accepted node (status open, no links yet)."""
    anchor, fix, triage = payload.anchor, payload.fix or Fix(), payload.triage
    return NodeView(
        id=node_id,
        agent=agent,
        stream=stream,
        type=payload.type,
        priority=payload.priority,
        confidence=payload.confidence,
        category=triage.category,
        severity=triage.severity,
        effort=triage.effort,
        path=anchor.path if anchor else None,
        start_line=anchor.start_line if anchor else None,
        end_line=anchor.end_line if anchor else None,
        side=anchor.side if anchor else Side.RIGHT,
        title=payload.title,
        body=payload.body,
        replacement_lines=tuple(fix.replacement_lines) if fix.replacement_lines else None,
        diff=fix.diff,
        fix_prompt=fix.fix_prompt,
        map_anchor=payload.map_anchor,
        exploitable_externally=triage.exploitable_externally,
        hot_path=triage.hot_path,
        critical_path=triage.critical_path,
        functional_effect=triage.functional_effect,
    )


def _check_against_checkout(anchor: Anchor, file_lines: FileLines, *, flat: bool) -> str | None:
    try:
        count = file_lines(anchor.path) if callable(file_lines) else file_lines.get(anchor.path)
    except Exception:  # a broken lookup must still yield a rejection, not a crash
        count = None
    at = "" if flat else "anchor."
    if count is None:
        return f"{at}path: {anchor.path} is not in the head checkout"
    if anchor.end_line > count:
        return f"{at}end_line {anchor.end_line} is past the end of {anchor.path} ({count} lines)"
    return None


def _rejected(problems: list[str]) -> Rejected:
    # Reasons quote the offending value and are stored on the stream: redact them too.
    cleaned = [redact_text(p) for p in problems]
    return Rejected(reason="; ".join(cleaned), problems=tuple(cleaned))


def _describe(error: Any, *, flat: bool = False) -> str:
    """The reason for one validation error, naming the field as the payload did ("" for an
    error another reason already covers)."""
    loc = tuple(str(part) for part in error["loc"])
    kind = error["type"]
    if flat:
        if loc == ("priority",) and kind == "missing":
            return ""  # no usable severity to derive it from: that one is reported
        for size in (2, 1):
            if loc[:size] in _FLAT_NAME:
                loc = (_FLAT_NAME[loc[:size]], *loc[size:])
                break
    where = ".".join(loc) or "payload"
    value = error.get("input")
    if kind == "missing":
        return f"{where}: required field is missing"
    if kind == "extra_forbidden":
        instead = _INSTEAD.get(where) if flat else None
        return f"{where}: unknown field" + (f"; {instead}" if instead else "")
    if kind == "enum":
        return f"{where}: must be one of {error['ctx']['expected']} (got {_show(value)})"
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        return f"{where}: must be an object (got {_show(value)})"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        expected = kind.split("_")[0]
        names = {
            "float": "a number",
            "int": "an integer",
            "string": "a string",
            "list": "a list",
            "bool": "true or false",
        }
        return f"{where}: must be {names.get(expected, expected)} (got {_show(value)})"
    if kind in {"too_short", "string_too_short"}:
        return f"{where}: must not be empty"
    # Custom errors already carry a sentence written for the agent.
    return f"{where}: {error['msg']}"


def _show(value: object) -> str:
    text = redact_text(repr(value))  # before truncating: a cut secret would match no rule
    return text if len(text) <= 60 else text[:57] + "..."
