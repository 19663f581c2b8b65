"""A reviewer's criteria, anti-patterns and few-shots have one shape (workspaces/rules.py):
the settings form, the API and the service refuse the same values, each in its own words."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

from workspaces import rules, services
from workspaces.models import ReviewerConfig
from workspaces.rules import RuleError

URL = "/api/v1/workspaces/{slug}/reviewers/quality"


@pytest.mark.parametrize(
    ("criteria", "line"),
    [
        ([{"name": "security", "weight": 11}], "security = 11"),
        ([{"name": "security", "weight": 0}], "security = 0"),
        ([{"name": "security", "weight": -2}], "security = -2"),
    ],
)
def test_form_api_and_service_refuse_the_same_criteria(
    workspace, alice, client_for, criteria, line
):
    client = client_for(alice)
    form = client.post(
        f"/w/{workspace.slug}/settings/reviewers/quality/",
        {
            "name": "Quality",
            "base_agent": "quality",
            "criteria": line,
            "shots-TOTAL_FORMS": "0",
            "shots-INITIAL_FORMS": "0",
        },
    )
    assert form.status_code == 400 and "Criterion 1, &#x27;weight&#x27;" in form.content.decode()
    api = client.patch(
        URL.format(slug=workspace.slug), {"criteria": criteria}, content_type="application/json"
    )
    assert api.status_code == 422 and "weight" in str(api.json()["detail"])
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    with pytest.raises(RuleError, match=r"Criterion 1, 'weight'"):
        services.reviewer_config_update(config=config, actor=alice, data={"criteria": criteria})
    assert ReviewerConfig.objects.get(pk=config.pk).criteria == config.criteria


def test_the_api_documents_the_shared_shapes(client):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    criterion = schemas["Criterion"]["properties"]
    assert criterion["weight"]["anyOf"][0]["exclusiveMinimum"] == 0
    assert set(schemas["FewShot"]["required"]) == {"excerpt", "good"}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([{"name": "x", "weight": True}], "weight must be a number"),
        ([{"name": "  ", "weight": 1}], "needs a name"),
        ([{"name": "x", "weight": "3"}], "weight must be a number"),
        ([{"name": "x", "weight": 3, "why": "y"}], "'why'"),
        ({"name": "x"}, "Criteria must be a list"),
    ],
)
def test_clean_criteria_says_which_item_and_why(values, message):
    with pytest.raises(RuleError, match=message):
        rules.clean_criteria(values)


def test_clean_keeps_whole_weights_whole_and_strips_names():
    assert rules.clean_criteria([{"name": " a ", "weight": 5}, {"name": "b", "weight": 2.5}]) == [
        {"name": "a", "weight": 5},
        {"name": "b", "weight": 2.5},
    ]
    assert rules.clean_anti_patterns([" god object ", "  "]) == ["god object"]
    assert rules.clean_few_shots([{"excerpt": "x = 1 ", "good": " fine "}]) == [
        {"excerpt": "x = 1 ", "good": "fine", "bad": ""}
    ]


def test_the_columns_refuse_what_the_rules_refuse(workspace):
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    config.criteria = [{"name": "x", "weight": 12}]
    with pytest.raises(ValidationError, match="weight"), transaction.atomic():
        config.save(update_fields=["criteria"])
    workspace.gated_axes = ["apiContract", "correctness"]
    with pytest.raises(ValidationError, match="gated_axes"), transaction.atomic():
        workspace.save(update_fields=["gated_axes"])


def test_a_criterion_name_the_schema_allows_is_one_the_validator_accepts():
    """The API schema's pattern for a criterion's name says what the validator checks, so a
    client that follows the document is not refused (characters Python strips count as blank)."""
    import re

    from pydantic import ValidationError

    from workspaces.rules import Criterion

    pattern = re.compile(Criterion.model_json_schema()["properties"]["name"]["pattern"])
    for name in ["\x1c\x1c", " \u3000", "\x85", "x", " a ", "\ufeff", "a\x00"]:
        try:
            Criterion.model_validate({"name": name, "weight": 1})
            accepted = True
        except ValidationError:
            accepted = False
        assert accepted == bool(pattern.search(name)), repr(name)


@given(st.characters(exclude_characters="\x00"))
def test_the_schema_and_the_check_agree_on_what_is_blank(char):
    """A one-character excerpt is text for the API's schema exactly when the server takes it
    as text: whitespace as JavaScript or Python counts it is blank for both."""
    import re

    from workspaces.rules import _NOT_BLANK_SCHEMA, FewShot

    schema_text = bool(re.match(_NOT_BLANK_SCHEMA["pattern"], char))
    try:
        FewShot.model_validate({"excerpt": char, "good": "a good verdict"})
        server_text = True
    except ValueError:
        server_text = False
    assert schema_text == server_text, repr(char)
