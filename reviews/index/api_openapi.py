"""OpenAPI / Swagger documents compared between base and head (the apiContract axis).

What breaks a client: a removed path or operation, a removed parameter, a new required
parameter or request-body field, a parameter or body that became required, a removed response,
a response property removed or retyped, any schema type change. What only adds: new paths,
operations, optional parameters and fields, new responses and response properties.
JSON is always read; YAML only when PyYAML can be imported (it is not a dependency of ours).
Only local `$ref`s (`#/...`) are followed, to a bounded depth.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from reviews.domain.indexed_files import SKIPPED_DIRS
from reviews.index.api_python import ApiChange

DOCUMENT_NAMES = frozenset(
    {"openapi.json", "openapi.yaml", "openapi.yml", "swagger.json", "swagger.yaml", "swagger.yml"}
)
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_MAX_DEPTH = 8


class UnreadableDocument(ValueError):
    pass


def is_openapi_path(path: str) -> bool:
    pure = PurePosixPath(path)
    return pure.name.lower() in DOCUMENT_NAMES and not any(
        part in SKIPPED_DIRS for part in pure.parts[:-1]
    )


def load_document(path: str, text: str) -> dict[str, Any]:
    if path.lower().endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UnreadableDocument(f"{path}: invalid JSON: {exc}") from exc
    else:
        try:
            import yaml
        except ImportError as exc:
            raise UnreadableDocument(f"{path}: YAML needs PyYAML, which is not installed") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UnreadableDocument(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise UnreadableDocument(f"{path}: not an OpenAPI document (top level is not a mapping)")
    return data


def diff_documents(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ApiChange]:
    return _Differ(old, new).run()


class _Differ:
    def __init__(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.old = old
        self.new = new
        self.changes: list[ApiChange] = []

    def _add(self, breaking: bool, where: str, message: str) -> None:
        self.changes.append(ApiChange("breaking" if breaking else "additive", where, message))

    def run(self) -> list[ApiChange]:
        old_paths = _mapping(self.old.get("paths"))
        new_paths = _mapping(self.new.get("paths"))
        for path in sorted(old_paths.keys() | new_paths.keys()):
            if path not in new_paths:
                self._add(True, path, "path removed")
                continue
            if path not in old_paths:
                self._add(False, path, "path added")
                continue
            old_item = _mapping(_deref(self.old, old_paths[path]))
            new_item = _mapping(_deref(self.new, new_paths[path]))
            for method in HTTP_METHODS:
                where = f"{method.upper()} {path}"
                if method in old_item and method not in new_item:
                    self._add(True, where, "operation removed")
                elif method in new_item and method not in old_item:
                    self._add(False, where, "operation added")
                elif method in old_item:
                    self._operation(where, old_item, new_item, method)
        return self.changes

    # operations -----------------------------------------------------------------------------

    def _operation(self, where: str, old_item: Mapping, new_item: Mapping, method: str) -> None:
        old_op, new_op = _mapping(old_item[method]), _mapping(new_item[method])
        old_params = _parameters(self.old, old_item, old_op)
        new_params = _parameters(self.new, new_item, new_op)
        for key in sorted(old_params.keys() | new_params.keys()):
            label = f"{key[0]} parameter {key[1]!r}"
            old_p, new_p = old_params.get(key), new_params.get(key)
            if key[0] == "body":  # Swagger 2 body parameter: a request body
                self._request_body(where, old_p, new_p)
                continue
            if new_p is None:
                self._add(True, where, f"{label} removed")
            elif old_p is None:
                required = bool(new_p.get("required")) or key[0] == "path"
                self._add(
                    required, where, f"{'required' if required else 'optional'} {label} added"
                )
            else:
                if new_p.get("required") and not old_p.get("required"):
                    self._add(True, where, f"{label} became required")
                self._schema(
                    f"{where} {label}",
                    old_p.get("schema", old_p),
                    new_p.get("schema", new_p),
                    response=False,
                    depth=0,
                )
        if "requestBody" in old_op or "requestBody" in new_op:
            self._request_body(
                where,
                _deref(self.old, old_op.get("requestBody")),
                _deref(self.new, new_op.get("requestBody")),
            )
        self._responses(where, _mapping(old_op.get("responses")), _mapping(new_op.get("responses")))

    def _request_body(self, where: str, old: Any, new: Any) -> None:
        old, new = _mapping(old), _mapping(new)
        if not new and old:
            self._add(True, where, "request body removed")
            return
        if new.get("required") and not old.get("required"):
            self._add(True, where, "request body became required")
        self._schema(
            f"{where} request body",
            _body_schema(self.old, old),
            _body_schema(self.new, new),
            response=False,
            depth=0,
        )

    def _responses(self, where: str, old: Mapping, new: Mapping) -> None:
        for status in sorted(set(old) | set(new), key=str):
            label = f"{where} response {status}"
            if status not in new:
                self._add(True, label, "response removed")
            elif status not in old:
                self._add(False, label, "response added")
            else:
                self._schema(
                    label,
                    _body_schema(self.old, _mapping(_deref(self.old, old[status]))),
                    _body_schema(self.new, _mapping(_deref(self.new, new[status]))),
                    response=True,
                    depth=0,
                )

    # schemas --------------------------------------------------------------------------------

    def _schema(self, where: str, old: Any, new: Any, *, response: bool, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        old = _mapping(_deref(self.old, old))
        new = _mapping(_deref(self.new, new))
        if not old or not new:
            return
        old_type, new_type = old.get("type"), new.get("type")
        if old_type is not None and new_type is not None and old_type != new_type:
            self._add(True, where, f"type changed from {old_type} to {new_type}")
            return
        old_props, new_props = _mapping(old.get("properties")), _mapping(new.get("properties"))
        old_required = (
            set(old.get("required") or ()) if isinstance(old.get("required"), list) else set()
        )
        new_required = (
            set(new.get("required") or ()) if isinstance(new.get("required"), list) else set()
        )
        for name in sorted(old_props.keys() | new_props.keys()):
            label = f"{where} field {name!r}"
            if name not in new_props:
                # A response losing a field breaks readers; a request losing one only stops
                # being read.
                self._add(response, label, "field removed")
            elif name not in old_props:
                required = not response and name in new_required
                self._add(required, label, f"{'required' if required else 'optional'} field added")
            else:
                if not response and name in new_required and name not in old_required:
                    self._add(True, label, "field became required")
                self._schema(
                    label, old_props[name], new_props[name], response=response, depth=depth + 1
                )
        if "items" in old and "items" in new:
            self._schema(
                f"{where}[]", old["items"], new["items"], response=response, depth=depth + 1
            )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _deref(document: Mapping[str, Any], value: Any, depth: int = 0) -> Any:
    """Follow a local `$ref` (`#/components/schemas/X`) to what it names."""
    while isinstance(value, Mapping) and isinstance(value.get("$ref"), str) and depth < _MAX_DEPTH:
        ref = value["$ref"]
        if not ref.startswith("#/"):
            return {}
        current: Any = document
        for raw in ref[2:].split("/"):
            key = raw.replace("~1", "/").replace("~0", "~")
            current = current.get(key) if isinstance(current, Mapping) else None
        value = current
        depth += 1
    return value


def _parameters(
    document: Mapping[str, Any], item: Mapping[str, Any], operation: Mapping[str, Any]
) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(in, name) → parameter; operation-level parameters override path-level ones."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for raw in [*(item.get("parameters") or ()), *(operation.get("parameters") or ())]:
        parameter = _mapping(_deref(document, raw))
        if "name" in parameter and "in" in parameter:
            key = (
                ("body", "body")
                if parameter["in"] == "body"
                else (str(parameter["in"]), str(parameter["name"]))
            )
            out[key] = parameter
    return out


def _body_schema(document: Mapping[str, Any], body: Mapping[str, Any]) -> Any:
    """The schema of a request body or response: Swagger 2 `schema`, or OpenAPI 3 `content`
    (JSON media type preferred)."""
    if "schema" in body:
        return body["schema"]
    content = _mapping(body.get("content"))
    for media_type in sorted(content, key=lambda m: (not m.endswith("json"), m)):
        return _mapping(_deref(document, content[media_type])).get("schema")
    return None
