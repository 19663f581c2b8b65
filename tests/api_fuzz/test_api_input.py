"""Bad input to the API is a 4xx with a message: the shared input types (properties) and the
cases that were 500s before them, through the real routes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from config.api_types import MAX_BIGINT, MAX_JSON_DEPTH, Input, JsonObject, Text, body_int


class Body(Input):
    text: Text = ""
    flag: bool = None
    number: body_int(ge=1, le=10) = 1
    details: JsonObject = {}


def _accepts(**data: Any) -> bool:
    try:
        Body.model_validate(data)
    except ValidationError:
        return False
    return True


@given(st.text())
def test_text_is_accepted_exactly_when_postgresql_can_store_it(value):
    storable = "\x00" not in value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        storable = False
    assert _accepts(text=value) is storable


def test_text_refuses_lone_surrogates():
    assert not _accepts(text="a\ud800b")


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_trees = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=20,
)


def _has_nul(tree: Any) -> bool:
    if isinstance(tree, str):
        return "\x00" in tree
    if isinstance(tree, list):
        return any(_has_nul(v) for v in tree)
    if isinstance(tree, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in tree.items())
    return False


@given(st.dictionaries(st.text(), json_trees, max_size=4))
def test_json_objects_are_accepted_exactly_without_nul_and_kept_as_sent(tree):
    if _has_nul(tree):
        assert not _accepts(details=tree)
    else:
        assert Body.model_validate({"details": tree}).details == tree


def _nested(depth: int) -> dict:
    tree: Any = 1
    for _ in range(depth):
        tree = {"a": tree}
    return tree


def test_json_depth_is_bounded_with_one_short_error():
    assert _accepts(details=_nested(MAX_JSON_DEPTH - 1))
    with pytest.raises(ValidationError) as caught:
        Body.model_validate({"details": _nested(500)})
    assert len(caught.value.errors()) == 1


@pytest.mark.parametrize("value", [None, "true", 1, 0, "1"])
def test_booleans_are_strict(value):
    assert not _accepts(flag=value)


@given(st.integers(min_value=-(10**20), max_value=10**20))
def test_body_integers_keep_their_bounds_whole_floats_included(value):
    assert _accepts(number=value) is (1 <= value <= 10)
    if abs(value) < 2**53:
        assert _accepts(number=float(value)) is (1 <= value <= 10)


@pytest.mark.parametrize("value", [1.5, "3", True, float("inf"), float("nan")])
def test_body_integers_refuse_what_is_not_a_whole_number(value):
    assert not _accepts(number=value)


# -- through the routes --------------------------------------------------------------------


@pytest.fixture
def api(client, workspace, alice, review_factory):
    from workspaces.services import api_token_create

    _, secret = api_token_create(user=alice, name="t")
    review_round = review_factory(workspace)

    def call(method: str, path: str, body: Any = None, raw: bytes | None = None):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        return getattr(client, method)(
            f"/api/v1/workspaces/{workspace.slug}{path}",
            data=data,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {secret}",
        )

    call.space = review_round.space_id
    return call


@pytest.mark.postgres
def test_bad_input_through_the_routes_is_a_4xx_with_a_message(api, workspace):
    space = api.space
    cases = [
        (422, "post", f"/reviews/{space}/nodes/1/dismiss", {"reason": "a\x00b"}, None),
        (422, "get", f"/reviews/{MAX_BIGINT + 1}", None, None),
        (422, "get", "/reviews/0", None, None),
        (404, "get", f"/reviews/{MAX_BIGINT}", None, None),
        (422, "get", "/audit?limit=0", None, None),
        (422, "get", "/audit?limit=1001", None, None),
        (422, "get", "/audit?offset=-1", None, None),
        (422, "get", "/audit?actor=a%00b", None, None),
        (422, "get", "/reviews?status=a%00", None, None),
        (422, "post", "/repositories", {"kind": "local", "name": "/x", "auto_review": None}, None),
        (422, "post", "/reviews", {"repository": MAX_BIGINT + 1}, None),
        (422, "post", "/reviews", {"repository": 1, "number": 2**31}, None),
        (
            400,
            "post",
            f"/reviews/{space}/axes/visual",
            None,
            b'{"result": "pass", "details": {"a": 1e400}}',
        ),
        (400, "post", f"/reviews/{space}/axes/visual", None, b'{"result": "pass", "details": NaN}'),
        (
            422,
            "post",
            f"/reviews/{space}/axes/visual",
            {"result": "pass", "details": {"k\x00": 1}},
            None,
        ),
        (
            422,
            "post",
            f"/reviews/{space}/axes/visual",
            {"result": "pass", "details": _nested(300)},
            None,
        ),
        (422, "post", "/reviewers", {"key": "Bad Key", "name": "x", "base_agent": "quality"}, None),
        (422, "patch", "/reviewers/quality", {"enabled": "true"}, None),
    ]
    for status, method, path, body, raw in cases:
        response = api(method, path, body, raw)
        assert response.status_code == status, (path, body, response.content[:300])
        detail = response.json()["detail"]
        assert detail, (path, detail)
        assert len(response.content) < 10_000, path


@pytest.mark.postgres
def test_null_for_an_optional_field_of_a_new_reviewer_means_its_default(api, workspace):
    response = api(
        "post",
        "/reviewers",
        {"key": "docs-check", "name": "Docs", "base_agent": "quality", "enabled": None},
    )
    assert response.status_code == 201, response.content
    assert response.json()["enabled"] is True


@pytest.mark.postgres
def test_withdraw_reaches_its_route(api):
    # Before the fix the {decision} route took "withdraw" and answered 422.
    response = api("post", f"/approvals/{MAX_BIGINT}/withdraw")
    assert response.status_code == 404


def test_no_two_api_schemas_share_a_name():
    """django-ninja keys OpenAPI components by class name: a second schema of the same name
    silently replaces the first in the document, which then describes the wrong body."""
    import inspect

    from ninja import Schema

    import guardrails.api
    import reviews.api.routes
    import workspaces.api.schemas

    seen: dict[str, str] = {}
    for module in (workspaces.api.schemas, reviews.api.routes, guardrails.api):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Schema) and cls.__module__ == module.__name__:
                assert name not in seen, f"{name} in {module.__name__} and {seen[name]}"
                seen[name] = module.__name__
