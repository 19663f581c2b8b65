"""The OpenAPI document is the API's contract: every response body has a schema, and the review
JSON of a real finished review matches its schema exactly (no field the schema does not name).

A body counts as undescribed when its schema, or any schema it reaches through `$ref`,
properties, items or unions, is empty (`{}`), an object without properties whose values are not
typed (`additionalProperties` missing, true or `{}`), or an array without typed items. An object
whose `additionalProperties` is a typed schema (a map of counts, a JSON value) is described.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest
from django.core.management import call_command

from reviews.sources.sample_repo import create_sample_repository

OPENAPI = "/api/v1/openapi.json"
_ANNOTATIONS = {"title", "description", "default", "examples", "deprecated", "readOnly"}


def _resolve(document: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _undescribed(
    document: dict[str, Any], schema: Any, where: str, seen: set[str]
) -> Iterator[str]:
    """Every place under `schema` that leaves a body (or part of one) undescribed."""
    if schema is True or not isinstance(schema, dict):
        yield f"{where}: {schema!r}"
        return
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref not in seen:
            seen.add(ref)
            yield from _undescribed(document, _resolve(document, ref), ref, seen)
        return
    if not set(schema) - _ANNOTATIONS:
        yield f"{where}: {{}} (any value)"
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for i, part in enumerate(schema.get(key, [])):
            yield from _undescribed(document, part, f"{where}.{key}[{i}]", seen)
    if schema.get("type") == "object" or "properties" in schema:
        extra = schema.get("additionalProperties")
        if not schema.get("properties") and extra in (None, True, {}):
            yield f"{where}: an object with untyped contents"
        for name, prop in schema.get("properties", {}).items():
            yield from _undescribed(document, prop, f"{where}.{name}", seen)
        if isinstance(extra, dict) and extra:
            yield from _undescribed(document, extra, f"{where}.*", seen)
    if schema.get("type") == "array":
        if "items" not in schema and "prefixItems" not in schema:
            yield f"{where}: an array of untyped items"
        else:
            for i, part in enumerate(schema.get("prefixItems", [])):
                yield from _undescribed(document, part, f"{where}[{i}]", seen)
            if "items" in schema:
                yield from _undescribed(document, schema["items"], f"{where}[]", seen)


def undescribed_bodies(document: dict[str, Any]) -> list[str]:
    problems = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                where = f"{method.upper()} {path} {status}"
                if str(status) == "204":  # No Content: no body to describe
                    continue
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if schema is None:
                    problems.append(f"{where}: no schema")
                    continue
                problems.extend(_undescribed(document, schema, where, set()))
    return problems


def _closed(document: dict[str, Any]) -> dict[str, Any]:
    """A copy whose described objects refuse undocumented fields, so the check is exact."""
    out = copy.deepcopy(document)

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("properties") and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(out["components"])
    return out


def validator_for(document: dict[str, Any], component: str) -> jsonschema_rs.Draft202012Validator:
    closed = _closed(document)
    return jsonschema_rs.Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": closed["components"]}
    )


def _errors(validator: jsonschema_rs.Draft202012Validator, instance: Any) -> list[str]:
    return [
        f"/{'/'.join(map(str, e.instance_path))}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


@pytest.fixture
def openapi(client) -> dict[str, Any]:
    response = client.get(OPENAPI)
    assert response.status_code == 200
    return response.json()


def test_every_response_body_in_the_openapi_document_is_described(openapi):
    assert undescribed_bodies(openapi) == []
    review = openapi["paths"]["/api/v1/workspaces/{slug}/reviews/{space_id}"]["get"]
    assert review["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ReviewJson"
    }


def test_the_check_finds_an_undescribed_body():
    from ninja import NinjaAPI, Schema

    class PlantedOut(Schema):
        counts: dict[str, int]  # typed values: described
        anything: dict  # untyped: not described

    planted = NinjaAPI(urls_namespace="planted-contract")

    @planted.get("/bare", response={200: dict})
    def bare(request): ...

    @planted.get("/nested", response={200: list[PlantedOut]})
    def nested(request): ...

    @planted.get("/nothing")
    def nothing(request): ...

    problems = undescribed_bodies(planted.get_openapi_schema(path_prefix="/planted/"))
    assert any(p.startswith("GET /planted/bare 200") for p in problems), problems
    assert any("PlantedOut.anything" in p for p in problems), problems
    assert not any("counts" in p for p in problems), problems
    assert any(p.startswith("GET /planted/nothing 200: no schema") for p in problems), problems


def test_an_undocumented_field_fails_the_review_schema(openapi):
    validator = validator_for(openapi, "ReviewFlagOut")
    assert _errors(validator, {"flagged_at": None, "reason": ""}) == []
    assert _errors(validator, {"flagged_at": None, "reason": "", "surprise": 1})
    assert _errors(validator, {"flagged_at": None})  # `reason` is required


@pytest.mark.django_db(transaction=True)
def test_a_finished_review_matches_its_schema(
    openapi, settings, tmp_path, member_factory, client_for
):
    """The offline pipeline reviews the sample repository (analyzers, axes, cohorts, a
    verdict): both the command's JSON and the API's answer are what the schema says."""
    from reviews.models import ReviewSpace

    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    base, head = create_sample_repository(tmp_path / "shop")
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command(
            "review",
            str(tmp_path / "shop"),
            "--base",
            base,
            "--head",
            head,
            "--format",
            "json",
            stdout=out,
            stderr=io.StringIO(),
        )
    exported = json.loads(out.getvalue())
    assert exported["nodes"] and exported["axes"] and exported["streams"] and exported["cohorts"]
    assert exported["verdict"]["level"] == "block"
    validator = validator_for(openapi, "ReviewJson")
    assert _errors(validator, exported) == []

    space = ReviewSpace.objects.get()
    viewer = member_factory(space.workspace, "viewer")
    url = f"/api/v1/workspaces/{space.workspace.slug}/reviews/{space.pk}"
    answered = client_for(viewer).get(url).json()
    assert _errors(validator, answered) == []
    # Through the API it is the same document: nothing dropped or renamed by the schema.
    assert answered == exported

    rounds = client_for(viewer).get(f"{url}/rounds").json()
    assert rounds == exported["rounds"]
    round_validator = validator_for(openapi, "RoundSummaryOut")
    assert all(_errors(round_validator, r) == [] for r in rounds)
