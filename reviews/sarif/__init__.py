"""The SARIF 2.1.0 JSON schema, vendored (README.md beside this file says where it came from),
and the validation every SARIF document Quorum reads or writes goes through.

The schema is read from the file once per process; nothing is fetched at run time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError, best_match

SCHEMA_PATH = Path(__file__).with_name("sarif-schema-2.1.0.json")
#: What a log names as its schema (`$schema`): the URI tools and GitHub code scanning use.
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"
_MESSAGE_MAX = 300


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator() -> Draft4Validator:
    return Draft4Validator(schema())


@dataclass(frozen=True, slots=True)
class SchemaError:
    """The most relevant schema violation of a document: where (a JSON path such as
    `$.runs[0].results[3].level`) and what, and how many violations there are in all."""

    path: str
    message: str
    count: int
    location: tuple[str | int, ...] = ()  # the same place as keys and indexes

    def __str__(self) -> str:
        more = f" ({self.count - 1} more)" if self.count > 1 else ""
        return f"{self.path}: {self.message}{more}"


def _json_path(error: ValidationError) -> str:
    out = "$"
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def schema_error(document: Any) -> SchemaError | None:
    """None when `document` is a valid SARIF 2.1.0 log; otherwise its most relevant error."""
    errors = list(_validator().iter_errors(document))
    if not errors:
        return None
    error = best_match(errors)
    message = error.message
    if len(message) > _MESSAGE_MAX:  # messages quote the offending value, which may be large
        message = message[: _MESSAGE_MAX - 1] + "…"
    return SchemaError(
        path=_json_path(error),
        message=message,
        count=len(errors),
        location=tuple(error.absolute_path),
    )
