"""Input types and error shapes shared by every API router.

Bad input must be answered with a 4xx and a message, never a 500. The database is the last to
know what it cannot store: PostgreSQL refuses NUL characters in text and jsonb, ids beyond
bigint and numbers beyond integer. So the schemas say it first, in the OpenAPI document too,
and clients (and schemathesis) see the same bounds the server enforces.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Schema
from ninja.parser import Parser
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema as cs

MAX_BIGINT = 2**63 - 1  # BigAutoField primary keys
MAX_INT = 2**31 - 1  # PositiveIntegerField columns
MAX_OFFSET = 1_000_000
NO_NUL = r"^[^\x00]*$"
# The part of config.safeurl's "blank or absolute http(s) URL" a schema can state: ASCII host,
# optional port, no whitespace or control characters. Fuzzers then send URLs that pass.
WEB_URL_PATTERN = r"^(https?://[A-Za-z0-9.-]+(:[0-9]{1,4})?([/?#][^\x00-\x20\x7f-\x9f\s\\]*)?)?$"


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("text cannot contain NUL (\\x00) characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from None
    return value


class _NoNulInSchema:
    """Say "no NUL" in the JSON schema, unless a stricter pattern is already there; the check
    itself is _storable, whose message is clearer than a failed pattern."""

    def __get_pydantic_json_schema__(
        self, schema: cs.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out.setdefault("pattern", NO_NUL)
        return out


# Text: any string PostgreSQL can store. Use it for every string that comes from a client.
Text = Annotated[str, AfterValidator(_storable), _NoNulInSchema()]


def _keys_storable(value: dict[str, Any]) -> dict[str, Any]:
    for key in value:
        _storable(key)
    return value


class _KeysWithoutNul:
    def __get_pydantic_json_schema__(
        self, schema: cs.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["propertyNames"] = {"pattern": NO_NUL}
        return out


MAX_JSON_DEPTH = 32


def _bounded_depth(value: Any) -> Any:
    # Checked before the recursive validation: past pydantic's recursion limit, its error
    # lists every branch at every level (2 MB for a 200-level body of a few hundred bytes).
    level = [value]
    for _ in range(MAX_JSON_DEPTH + 1):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return value
    raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


# Free-form JSON (e.g. an axis result's details) with storable text at every level: jsonb
# refuses \u0000 in keys and values alike. Size is bounded by the body-size cap.
type JsonValue = Text | int | float | bool | list[JsonValue] | JsonMap | None
type JsonMap = Annotated[dict[str, JsonValue], AfterValidator(_keys_storable), _KeysWithoutNul()]
JsonObject = Annotated[JsonMap, BeforeValidator(_bounded_depth)]


def _integral(value: Any) -> Any:
    # JSON Schema counts 7.0 as an integer, so a client may send it; strict ints would not.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Ids are bigint primary keys: anything else is a 422, not a database overflow; a well-formed
# id that names nothing is a 404. (No validator on parameter types: with one, django-ninja
# writes ge/le instead of minimum/maximum into the parameter's schema.)
Id = Annotated[int, Field(ge=1, le=MAX_BIGINT)]


# For integers in a request body (parameters arrive as text and parse as usual). In an
# Annotated type the bounds come before it: after it, pydantic leaves them out of the schema.
INTEGRAL = BeforeValidator(_integral)


def body_int(*, ge: int, le: int) -> Any:
    """A bounded integer in a request body."""
    return Annotated[int, Field(ge=ge, le=le), INTEGRAL]


BodyId = body_int(ge=1, le=MAX_BIGINT)
Slug = Annotated[str, Field(min_length=1, max_length=50, pattern=r"^[-a-zA-Z0-9_]+$")]
# The form reviewer_config_create stores a key in (slugify), so the key sent is the key kept.
ReviewerKey = Annotated[
    str, Field(min_length=1, max_length=50, pattern=r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")
]
Limit = Annotated[int, Field(ge=1, le=1000)]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]
Filter = Annotated[Text, Field(max_length=200)]


def _iso_day(value: Any) -> Any:
    # The schema says format "date": a day is YYYY-MM-DD, not pydantic's lax numbers
    # (`until=0` would be read as 1970-01-01).
    if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError("a day is written YYYY-MM-DD")
    return value


Day = Annotated[date, BeforeValidator(_iso_day)]


def _query_bool(value: Any) -> Any:
    # Query strings carry text: accept only the four spellings, not pydantic's yes/on/t/….
    if isinstance(value, str):
        try:
            return {"true": True, "1": True, "false": False, "0": False}[value]
        except KeyError:
            raise ValueError("use true, false, 1 or 0") from None
    return value


QueryBool = Annotated[bool, BeforeValidator(_query_bool)]


def _drop_null_defaults(schema: dict[str, Any]) -> None:
    # `field: bool = None` means "may be omitted, must not be null"; a "default": null next to
    # "type": "boolean" would tell clients (and fuzzers) that null is a fine value to send.
    for prop in schema.get("properties", {}).values():
        if prop.get("default", ...) is None and "anyOf" not in prop:
            del prop["default"]


class Input(Schema):
    """Base of every request body: unknown fields, coercions ("1" for 1, 1 for true, null for
    a non-nullable field) and NaN/Infinity are refused with a 422."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        json_schema_extra=_drop_null_defaults,
    )


class ErrorOut(Schema):
    detail: str
    # Stable, for clients to branch on (config/application_errors.py); absent on the framework's
    # own answers (authentication, unparseable bodies).
    code: str | None = None


class ValidationIssue(Schema):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(Schema):
    detail: list[ValidationIssue]


_ERRORS: dict[int, type[Schema]] = {
    400: ErrorOut,  # refused by a rule (an ApplicationError): the body is valid, the act is not
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,  # also for workspaces the caller is not a member of
    409: ErrorOut,
    413: ErrorOut,
    422: ValidationErrorOut,
    503: ErrorOut,
}


def responses(ok: dict[int, Any], *errors: int) -> dict[int, Any]:
    """A route's response map: its successes plus the error statuses it can answer with.
    Every route needs authentication (401); routes with parameters validate them (422)."""
    out = dict(ok)
    for code in sorted({401, *errors}):
        out.setdefault(code, _ERRORS[code])
    return out


class JSONParser(Parser):
    """The default parser, minus Python's NaN/Infinity extensions to JSON (and 1e400, which
    Python reads as infinity): the body is refused as unparseable (400)."""

    def parse_body(self, request: HttpRequest) -> Any:
        return json.loads(request.body, parse_constant=_refuse_constant, parse_float=_finite)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value
