"""What a round's reviewers send: one prefix they all share (rules, tools, the change and its
diff) with each reviewer's own role last, so a provider caches and bills the shared part once;
findings and closing in one turn; and a model that still works a finding per turn gets the same
review. Asserted on what the fake model server received."""

from __future__ import annotations

import json

import pytest

from reviews.agents.prompts import REVIEWER_SYSTEM_PROMPT
from reviews.models import ReviewNode
from tests.fakes.model_server import good_findings, nested_finding, one_finding_per_turn
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)

# Reviewers whose closing has the common shape (the requirements reviewer's carries its table).
COMMON_CLOSING = ("impl", "sec", "quality", "arch", "perf")


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    return scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="thorough"
    )


def _first_requests(fake_model, protocol="openai"):
    return {r.script: r for r in fake_model.recorded(protocol) if r.turn == 0}


def _common_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))


def test_the_reviewers_of_a_round_send_one_shared_prefix_and_their_role_last(shop, fake_model):
    scenario.install(fake_model)
    shop()
    first = _first_requests(fake_model)
    bodies = {name: first[name].json for name in COMMON_CLOSING}
    for body in bodies.values():
        system, user = body["messages"]
        assert system["content"] == REVIEWER_SYSTEM_PROMPT  # no reviewer's name in it
        shared, role = (part["text"] for part in user["content"])
        assert role.startswith("## Your role\n\nYou are the ")
        assert "source=diff>>>" in shared and "You are the" not in shared
    reference = bodies["impl"]
    for body in bodies.values():
        assert body["tools"] == reference["tools"]  # same tools, same order, same schemas
        assert body["messages"][1]["content"][0] == reference["messages"][1]["content"][0]
    # The raw requests agree byte for byte up to the role: that is the prefix a provider caches.
    raw = {name: first[name].body for name in COMMON_CLOSING}
    for name in COMMON_CLOSING[1:]:
        common = _common_prefix(raw["impl"], raw[name])
        assert raw[name].index("## Your role") <= common + len("## Your role")
    # The whole diff is in the prompt: no get_diff; a first pass lists and confirms nothing.
    offered = {tool["function"]["name"] for tool in reference["tools"]}
    assert offered == {
        "add_review_node",
        "add_note",
        "read",
        "final_answer",
    }
    schema = next(t for t in reference["tools"] if t["function"]["name"] == "add_review_node")
    assert len(json.dumps(schema["function"]["parameters"], separators=(",", ":"))) < 2300


def test_each_reviewer_records_its_findings_and_closes_in_one_call(shop, fake_model):
    scenario.install(fake_model)
    review_round = shop()
    reviewer_calls = [r for r in fake_model.recorded() if r.script in (*COMMON_CLOSING, "req")]
    assert sorted(r.script for r in reviewer_calls) == sorted((*COMMON_CLOSING, "req"))
    titles = set(
        ReviewNode.objects.filter(round=review_round, stream__name="security").values_list(
            "title", flat=True
        )
    )
    assert titles == {
        "SQL query built from the search term",
        "Order deletion has no permission check",
    }
    security = review_round.streams.get(name="security")
    assert security.state == "done" and security.coverage_note.startswith("Examined")
    assert review_round.verdict.level == "block"


def _review(review_round) -> tuple[list[tuple[str, str]], str, int]:
    nodes = ReviewNode.objects.filter(round=review_round, stream__kind="model")
    return (
        sorted(nodes.values_list("stream__name", "title")),
        review_round.verdict.level,
        review_round.nodes.count(),
    )


def test_a_model_that_records_a_finding_per_turn_gets_the_same_review(shop, fake_model):
    scenario.install(fake_model)
    canonical = _review(shop())
    one_by_one = one_finding_per_turn(
        [scenario.sql_finding(), scenario.permission_finding()],
        path="shop/search.py",
        name="sec-one-by-one",
    )
    scenario.install(fake_model, overrides={"security": one_by_one})
    again = shop()
    assert _review(again) == canonical
    turns = sorted(r.turn for r in fake_model.recorded() if r.script == "sec-one-by-one")
    assert turns == [0, 1, 2]  # a finding, a finding, the closing
    assert again.streams.get(name="security").coverage_note.startswith("Examined")


def test_a_model_that_answers_in_the_nested_form_gets_the_same_review(shop, fake_model):
    """The schema shows the flat form; a model that sends the nested one it was not shown (an
    old prompt, a bad day) records the same findings, stored alike."""
    scenario.install(fake_model)
    first = shop()
    canonical = _review(first)
    stored = _stored(first, "security")
    nested = [
        nested_finding(
            scenario.SQL["path"],
            scenario.SQL["line"],
            title="SQL query built from the search term",
            body="The search term is formatted into the SQL string: use a query parameter.",
            priority="P0",
            confidence=0.9,
            triage={"category": "security", "severity": "critical", "effort": "small"},
        ),
        nested_finding(
            scenario.PERMISSION["path"],
            scenario.PERMISSION["line"],
            title="Order deletion has no permission check",
            body="Any caller can delete any order; check request.user like total_view does.",
            priority="P1",
            confidence=0.85,
        ),
    ]
    assert all("triage" in p and "anchor" in p and "severity" not in p for p in nested)
    old_shape = good_findings(nested, path="shop/search.py", name="sec-nested", one_turn=True)
    scenario.install(fake_model, overrides={"security": old_shape})
    again = shop()
    assert _review(again) == canonical
    assert _stored(again, "security") == stored
    assert again.streams.get(name="security").rejected == 0


def _stored(review_round, stream: str) -> list[tuple]:
    return sorted(
        ReviewNode.objects.filter(round=review_round, stream__name=stream).values_list(
            "title", "path", "start_line", "end_line", "priority", "severity", "category", "effort"
        )
    )


def test_on_anthropic_the_shared_prefix_is_marked_for_caching(
    settings, tmp_path, workspace, fake_model, alice
):
    review = scenario.sample_reviews(
        settings, tmp_path, workspace, fake_model, alice, tier="balanced"
    )
    settings.QUORUM_LLM_PROVIDER = "anthropic"
    settings.QUORUM_LLM_BASE_URL = fake_model.anthropic_base_url
    scenario.install(fake_model)
    review_round = review()
    assert review_round.verdict.level == "block"
    first = _first_requests(fake_model, "anthropic")
    bodies = [first[name].json for name in ("impl", "quality", "arch")]
    for body in bodies:
        # The tools and the system prompt end in a cache mark, and so does the shared brief;
        # the reviewer's role, the request's last block, carries the mark that lets the run's
        # next turn read this whole request from the cache.
        assert body["tools"][-1]["cache_control"]["type"] == "ephemeral"
        assert body["system"][-1]["cache_control"]["type"] == "ephemeral"
        assert body["system"][-1]["text"] == REVIEWER_SYSTEM_PROMPT
        [message] = body["messages"]
        shared, role = message["content"]
        assert shared["cache_control"]["type"] == role["cache_control"]["type"] == "ephemeral"
        assert role["text"].startswith("## Your role")
    for body in bodies[1:]:
        assert body["tools"] == bodies[0]["tools"] and body["system"] == bodies[0]["system"]
        assert body["messages"][0]["content"][0] == bodies[0]["messages"][0]["content"][0]
