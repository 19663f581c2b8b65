"""The verdict follows decisions: every trigger decides again through the finaliser, records
the change (old → new, why, who), audits it and pushes it live (issue 11, item 5)."""

from __future__ import annotations

import itertools

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardrails.models import AuditEvent
from reviews.domain import types as t
from reviews.domain.consensus import ConsensusError
from reviews.domain.verdict import finalise
from reviews.live.events import space_group
from reviews.models import NodeConfirmation, ReviewNode, ReviewRound, Verdict, VerdictChange
from reviews.selectors import node_view
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from reviews.services.nodes import (
    node_confirm,
    node_confirm_by_person,
    node_dismiss,
    node_reopen,
    node_resolve,
)
from reviews.services.rounds import axis_submit, round_supply_request
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload


def _finished(review_round: ReviewRound) -> ReviewRound:
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    review_round.refresh_from_db()
    return review_round


@pytest.fixture
def block_review(review_factory, stream_factory, workspace):
    """A finished round decided Block by a P0, with a P1 and a P3 beside it; no gated axis."""
    workspace.gated_axes = []
    workspace.save(update_fields=["gated_axes"])
    review_round = review_factory(workspace)
    security = stream_factory(review_round, "security")
    quality = stream_factory(review_round, "quality")
    nodes = {
        "p0": node_record(
            stream=security,
            payload=node_payload(priority="P0", confidence=0.9, title="SQL built from input"),
        ).node,
        "p1": node_record(
            stream=quality,
            payload=node_payload(priority="P1", title="Pickle load", anchor=None),
        ).node,
        "p3": node_record(stream=quality, payload=node_payload(priority="P3", title="Nit")).node,
    }
    round_finalise(review_round=review_round)
    return _finished(review_round), nodes


def _verdict(review_round: ReviewRound) -> Verdict:
    return Verdict.objects.get(round=review_round)


def test_resolving_and_dismissing_move_the_verdict_and_record_who_and_why(block_review, alice):
    review_round, nodes = block_review
    first = _verdict(review_round)
    assert first.level == "block"
    assert first.rule == "P0 at 0.90: SQL built from input (app/views.py:10-12)"
    node_resolve(node=nodes["p0"], user=alice, reason="fixed in abc")
    held = _verdict(review_round)
    assert held.level == "hold" and held.rule.startswith("P1: Pickle load")
    node_dismiss(node=nodes["p1"], user=alice, reason="not reachable")
    assert _verdict(review_round).level == "ship"
    node_reopen(node=nodes["p1"], user=alice)
    assert _verdict(review_round).level == "hold"

    changes = list(VerdictChange.objects.filter(round=review_round))
    assert [(c.old_level, c.new_level) for c in changes] == [
        ("block", "hold"),
        ("hold", "ship"),
        ("ship", "hold"),
    ]
    assert all(c.actor == alice and c.actor_label == alice.email for c in changes)
    assert "resolved by a person (fixed in abc)" in changes[0].reason
    assert changes[0].old_rule == first.rule and changes[0].new_rule == held.rule
    assert "SQL built from input" in changes[0].reason

    events = list(
        AuditEvent.objects.filter(action__in=["node.resolved", "verdict.changed"]).order_by("seq")
    )
    # The decision first, then the verdict it moved; both carry the person.
    assert [e.action for e in events[:2]] == ["node.resolved", "verdict.changed"]
    verdict_events = [e for e in events if e.action == "verdict.changed"]
    assert [(e.payload["before"], e.payload["after"]) for e in verdict_events] == [
        ("block", "hold"),
        ("hold", "ship"),
        ("ship", "hold"),
    ]
    assert {e.actor_id for e in verdict_events} == {alice.pk}


def test_a_decision_that_changes_nothing_records_nothing(block_review, alice):
    review_round, nodes = block_review
    node_resolve(node=nodes["p3"], user=alice)  # a nit: Block stays Block, same rule
    assert _verdict(review_round).level == "block"
    assert not VerdictChange.objects.exists()
    assert not AuditEvent.objects.filter(action="verdict.changed").exists()


def test_a_person_confirms_a_finding_as_a_peer(block_review, alice, member_factory):
    review_round, nodes = block_review
    node = node_confirm_by_person(node=nodes["p1"], user=alice, reason="reproduced it")
    assert node.status == "consensus_ready"
    confirmation = NodeConfirmation.objects.get(node=node)
    assert (confirmation.agent, confirmation.lens) == (f"person:{alice.pk}", "peer")
    assert AuditEvent.objects.filter(action="node.confirmed", actor_id=alice.pk).exists()
    # The P0 still decides; once it is resolved the confirmed P1 decides, and says so.
    node_resolve(node=nodes["p0"], user=alice)
    verdict = _verdict(review_round)
    assert verdict.level == "hold"
    assert verdict.rule.endswith("confirmed by a person")
    # A second person confirming a consensus_ready node is recorded too; status stays.
    bob = member_factory(review_round.space.workspace, "reviewer")
    node_confirm_by_person(node=nodes["p1"], user=bob)
    assert NodeConfirmation.objects.filter(node=node).count() == 2
    with pytest.raises(ConsensusError):
        node_confirm_by_person(node=nodes["p0"], user=alice)  # resolved: nothing to confirm


def test_an_agent_confirmation_after_the_verdict_is_recorded_as_the_system(block_review, alice):
    review_round, nodes = block_review
    node_resolve(node=nodes["p0"], user=alice)
    VerdictChange.objects.all().delete()
    node_confirm(node=nodes["p1"], by_agent="security")
    change = VerdictChange.objects.get()
    assert (change.old_level, change.new_level) == ("hold", "hold")
    assert change.actor is None and change.actor_label == "system"
    assert "confirmed by security" in change.new_rule


def test_submitting_an_axis_decides_again_and_missing_data_states_no_confidence(
    block_review, alice
):
    review_round, nodes = block_review
    workspace = review_round.space.workspace
    workspace.gated_axes = ["apiContract"]
    workspace.save(update_fields=["gated_axes"])
    for key in ("p0", "p1"):
        node_resolve(node=nodes[key], user=alice)
    held = _verdict(review_round)
    assert held.level == "hold" and held.confidence is None
    assert held.rule == (
        "gated axis apiContract is unavailable: submit it from CI or un-gate it in settings"
    )
    axis_submit(
        review_round=review_round,
        axis=t.AxisName.API_CONTRACT,
        result=t.AxisResult.PASS,
        evidence_url="",
        details={},
        actor=alice,
    )
    shipped = _verdict(review_round)
    assert (shipped.level, shipped.confidence) == ("ship", 1.0)
    change = VerdictChange.objects.order_by("id").last()
    assert (change.old_level, change.new_level, change.old_confidence) == ("hold", "ship", None)
    assert change.reason == "axis apiContract submitted: pass" and change.actor == alice


def test_supplying_the_request_decides_again(block_review, alice):
    review_round, _ = block_review
    # A verdict left stale (e.g. written by an older version) is corrected by the next decision.
    Verdict.objects.filter(round=review_round).update(level="ship", rule="stale", confidence=1.0)
    round_supply_request(review_round=review_round, text="Add a search endpoint", actor=alice)
    assert _verdict(review_round).level == "block"
    change = VerdictChange.objects.get()
    assert (change.old_level, change.new_level, change.reason) == (
        "ship",
        "block",
        "original request supplied",
    )


def test_a_running_round_has_no_verdict_to_follow(review_factory, stream_factory, alice):
    review_round = review_factory()
    stream = stream_factory(review_round, "security")
    node = node_record(stream=stream, payload=node_payload(priority="P0")).node
    node_resolve(node=node, user=alice)
    assert not Verdict.objects.filter(round=review_round).exists()


def test_the_change_is_pushed_live(block_review, alice, django_capture_on_commit_callbacks):
    review_round, nodes = block_review
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(space_group(review_round.space_id), channel)
    with django_capture_on_commit_callbacks(execute=True):
        node_resolve(node=nodes["p0"], user=alice)
    # One transaction's events arrive as one message: the card's status, the axes, the verdict.
    message = async_to_sync(layer.receive)(channel)
    assert message["type"] == "review.batch"
    events = message["events"]
    assert "review.node_status" in [e["type"] for e in events]
    # The fixture's own events (its test transaction never commits) ride along before them.
    verdict = [e for e in events if e["type"] == "review.verdict"][-1]
    assert (verdict["previous"], verdict["level"]) == ("block", "hold")


def test_the_finaliser_ignores_a_self_confirmation_planted_in_the_database(block_review, alice):
    """Third independent check of "never one's own confirmation": a row written around the
    confirmation service, whose author is the node's own author, counts for nothing."""
    review_round, nodes = block_review
    node_resolve(node=nodes["p0"], user=alice)
    p1 = nodes["p1"]
    NodeConfirmation.objects.create(node=p1, agent=p1.stream.agent, lens="peer", verdict="real")
    ReviewNode.objects.filter(pk=p1.pk).update(status="consensus_ready")
    verdict = round_finalise(review_round=review_round)
    assert "confirmed" not in verdict.rule
    NodeConfirmation.objects.create(node=p1, agent="security", lens="peer", verdict="real")
    assert round_finalise(review_round=review_round).rule.endswith("confirmed by security")


_DECISIONS = st.lists(
    st.tuples(st.sampled_from(["resolve", "dismiss", "reopen", "confirm"]), st.integers(0, 3)),
    max_size=6,
)
_NODES = st.lists(
    st.tuples(st.sampled_from(["P0", "P1", "P2", "P3"]), st.sampled_from([0.5, 0.75, 0.95])),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(specs=_NODES, decisions=_DECISIONS, gated=st.booleans())
def test_recomputation_gives_the_finalisers_verdict_for_the_same_nodes(
    review_factory, stream_factory, alice, specs, decisions, gated
):
    """Property: after any sequence of decisions, the stored verdict is exactly what the
    finaliser decides from the same nodes and axes read back from the database."""
    review_round = review_factory()
    workspace = review_round.space.workspace
    workspace.gated_axes = ["apiContract"] if gated else []
    workspace.save(update_fields=["gated_axes"])
    stream = stream_factory(review_round, "security")
    nodes = [
        node_record(
            stream=stream,
            payload=node_payload(priority=p, confidence=c, title=f"Finding {i}"),
        ).node
        for i, (p, c) in enumerate(specs)
    ]
    round_finalise(review_round=review_round)
    _finished(review_round)
    act = {
        "resolve": node_resolve,
        "dismiss": node_dismiss,
        "reopen": node_reopen,
        "confirm": node_confirm_by_person,
    }
    for action, index in decisions:
        try:
            act[action](node=nodes[index % len(nodes)], user=alice, reason="decided in a test")
        except ConsensusError:
            continue
    axis_record(
        review_round=review_round,
        axis=t.AxisName.CORRECTNESS,
        result=t.AxisResult.PASS,
        source="tokens",
    )
    stored = Verdict.objects.get(round=review_round)
    fresh = [
        node_view(n, list(n.confirmations.all()))
        for n in ReviewNode.objects.filter(round=review_round).select_related("stream")
    ]
    expected = finalise(
        fresh,
        axes={t.AxisName.CORRECTNESS: t.AxisResult.PASS},
        gated=[t.AxisName(a) for a in workspace.gated_axes],
    )
    assert (stored.level, stored.rule, stored.confidence) == (
        expected.level.value,
        expected.rule,
        expected.confidence,
    )
    assert stored.contributing == list(expected.contributing)
    changes = list(VerdictChange.objects.filter(round=review_round))
    for before, after in itertools.pairwise(changes):
        assert after.old_level == before.new_level and after.old_rule == before.new_rule
    if changes:
        assert changes[-1].new_level == stored.level
