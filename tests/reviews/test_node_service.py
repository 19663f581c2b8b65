"""Recording findings and the node status service."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.models import AuditEvent
from reviews.domain.consensus import ConsensusError, SelfConfirmationError
from reviews.domain.panel import LensVerdict
from reviews.domain.types import Severity
from reviews.models import MemoryFact, NodeConfirmation, ReviewerStream, ReviewNode
from reviews.services.node_panel import node_panel_apply
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm, node_dismiss, node_reopen, node_resolve
from tests.fixtures import node_payload

FILES = {"app/views.py": 40, "app/models.py": 80}


@pytest.fixture
def review_round(review_factory):
    return review_factory()


@pytest.fixture
def streams(review_round, stream_factory):
    return {
        "security": stream_factory(review_round, "security", agent="security"),
        "quality": stream_factory(review_round, "quality"),
        # The same agent under another stream name (a retry): still the author.
        "security-retry": stream_factory(review_round, "security-retry", agent="security"),
    }


def test_it_records_a_valid_node_once_even_if_delivered_twice(streams):
    first = node_record(stream=streams["security"], payload=node_payload(), file_lines=FILES)
    again = node_record(stream=streams["security"], payload=node_payload(), file_lines=FILES)
    assert first.created and not again.created
    assert first.node.pk == again.node.pk
    assert ReviewNode.objects.count() == 1
    node = first.node
    assert (node.priority, node.path, node.start_line, node.status) == (
        "P1",
        "app/views.py",
        10,
        "open",
    )
    assert node.fingerprint and node.credited_agents == []  # others join when merged
    assert ReviewerStream.objects.get(pk=streams["security"].pk).accepted == 1


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"title": "no type"}, "type"),
        (node_payload(confidence="high"), "confidence"),
        (node_payload(confidence=1.5), "confidence: must be between 0 and 1 (got 1.5)"),
        (node_payload(priority="P7"), "priority"),
        (
            node_payload(anchor={"path": "../../etc/passwd", "start_line": 1, "end_line": 1}),
            "anchor.path",
        ),
        (
            node_payload(anchor={"path": "app/views.py", "start_line": 39, "end_line": 41}),
            "past the end of app/views.py (40 lines)",
        ),
        (
            node_payload(anchor={"path": "app/missing.py", "start_line": 1, "end_line": 1}),
            "not in the head checkout",
        ),
        ("not json at all", "not valid JSON"),
    ],
)
def test_it_rejects_bad_payloads_with_a_reason_and_counts_them(streams, payload, reason):
    result = node_record(stream=streams["quality"], payload=payload, file_lines=FILES)
    assert result.node is None
    assert reason in result.rejection
    stream = ReviewerStream.objects.get(pk=streams["quality"].pk)
    assert stream.rejected == 1 and stream.accepted == 0
    assert reason in stream.rejection_reasons[0]
    assert not ReviewNode.objects.exists()


def test_a_peer_confirmation_makes_a_node_consensus_ready(streams):
    node = node_record(stream=streams["security"], payload=node_payload(), file_lines=FILES).node
    node_confirm(node=node, by_agent="quality")
    node.refresh_from_db()
    assert node.status == "consensus_ready"
    assert NodeConfirmation.objects.get(node=node).agent == "quality"


@pytest.mark.parametrize("agent", ["security"])
def test_an_author_can_never_confirm_its_own_node_under_any_stream_name(streams, agent):
    node = node_record(
        stream=streams["security-retry"], payload=node_payload(), file_lines=FILES
    ).node
    with pytest.raises(SelfConfirmationError):
        node_confirm(node=node, by_agent=agent)
    node.refresh_from_db()
    assert node.status == "open"
    assert not NodeConfirmation.objects.exists()


def test_dismissal_writes_a_non_binding_memory_hint_and_an_audit_event(streams, alice):
    node = node_record(stream=streams["security"], payload=node_payload(), file_lines=FILES).node
    node_dismiss(node=node, user=alice, reason="ORM escapes this already")
    node.refresh_from_db()
    assert node.status == "dismissed"
    fact = MemoryFact.objects.get()
    assert fact.binding is False and fact.confidence < 0.5
    assert fact.fingerprint == node.fingerprint and fact.path_pattern == "app/views.py"
    assert "ORM escapes this already" in fact.statement
    event = AuditEvent.objects.get(action="node.dismissed")
    assert event.payload["before"] == "open" and event.payload["after"] == "dismissed"
    # A dismissed node can be reopened by a person, then resolved.
    node_reopen(node=node, user=alice)
    node_resolve(node=node, user=alice)
    node.refresh_from_db()
    assert node.status == "resolved"


def test_resolving_an_already_resolved_node_is_refused(streams, alice):
    node = node_record(stream=streams["security"], payload=node_payload(), file_lines=FILES).node
    node_resolve(node=node, user=alice)
    with pytest.raises(ConsensusError):
        node_resolve(node=node, user=alice)  # already resolved: not a valid transition


def test_a_batch_records_like_one_at_a_time_and_only_once(streams):
    from reviews.services.node_recording import Finding, node_record_many

    stream = streams["security"]
    first = node_payload(title="Shell call built from input")
    second = node_payload(
        title="Hard-coded password",
        anchor={"path": "app/models.py", "start_line": 20, "end_line": 20},
    )
    evidence = {"tool": "bandit", "rule": "B602", "high_precision": False}
    batch = [
        Finding(first, evidence=evidence),
        Finding({"title": "no type"}),
        Finding(first, evidence=evidence),  # said twice
        Finding(second),
    ]
    results = node_record_many(stream=stream, findings=batch, file_lines=FILES)
    assert [r.created for r in results] == [True, False, False, True]
    assert results[1].node is None and "type" in results[1].rejection
    assert results[0].node.pk == results[2].node.pk
    stored = ReviewNode.objects.get(pk=results[0].node.pk)
    assert (stored.tags.analyzer.tool, stored.tags.analyzer.rule) == ("bandit", "B602")
    # The same fingerprint the one-at-a-time path gives the same finding in another stream.
    single = node_record(stream=streams["quality"], payload=first, file_lines=FILES).node
    assert stored.fingerprint == single.fingerprint
    counted = ReviewerStream.objects.get(pk=stream.pk)
    assert (counted.accepted, counted.rejected) == (2, 1)

    again = node_record_many(stream=stream, findings=batch, file_lines=FILES)
    assert [r.node.pk for r in again if r.node] == [r.node.pk for r in results if r.node]
    assert not any(r.created for r in again)
    assert ReviewNode.objects.filter(stream=stream).count() == 2


# -- the verification panel on a group ---------------------------------------------------------


def _group(streams, count: int) -> list[ReviewNode]:
    return [
        node_record(
            stream=streams["security"],
            payload=node_payload(
                title=f"Finding {i}",
                anchor={"path": "app/models.py", "start_line": i + 1, "end_line": i + 1},
            ),
            file_lines=FILES,
        ).node
        for i in range(count)
    ]


def _answers(
    nodes, verdict: LensVerdict | None, *, lenses=("reachability", "false_positive", "severity")
):
    return {
        n.pk: {lens: (verdict, Severity.HIGH if verdict else None, "traced") for lens in lenses}
        for n in nodes
    }


@pytest.mark.parametrize("verdict", [LensVerdict.REAL, LensVerdict.FALSE_POSITIVE])
def test_a_group_costs_the_same_statements_whatever_its_size(streams, verdict):
    """Lock, confirmations, the lenses' rows, the status moves, the rest: a few statements for
    one finding or eight."""
    costs = []
    for size in (1, 8):
        nodes = _group(streams, size) if size == 1 else _group(streams, 9)[1:]
        with CaptureQueriesContext(connection) as ctx:
            outcomes = node_panel_apply(nodes=nodes, answers=_answers(nodes, verdict))
        costs.append(len(ctx.captured_queries))
        expected = "confirmed" if verdict is LensVerdict.REAL else "filtered"
        assert {o.status.value for o in outcomes.values()} == {expected}
        stored = ReviewNode.objects.filter(pk__in=[n.pk for n in nodes])
        status = "consensus_ready" if verdict is LensVerdict.REAL else "dismissed"
        assert {(n.status, n.tags.panel) for n in stored} == {(status, expected)}
    assert costs[0] == costs[1], costs


def test_a_group_leaves_a_finding_a_person_closed_and_applies_the_others(streams, alice):
    """Both lenses call every finding of the group a false positive; one was resolved by a
    person meanwhile: it stays resolved, the others are filtered, nothing fails."""
    nodes = _group(streams, 3)
    node_resolve(node=nodes[0], user=alice)
    nodes[0].refresh_from_db()
    node_panel_apply(nodes=nodes, answers=_answers(nodes, LensVerdict.FALSE_POSITIVE))
    stored = {n.pk: n for n in ReviewNode.objects.filter(pk__in=[n.pk for n in nodes])}
    assert stored[nodes[0].pk].status == "resolved"
    assert {stored[n.pk].status for n in nodes[1:]} == {"dismissed"}
    assert all(n.tags.panel == "filtered" for n in stored.values())


def test_an_analyzer_finding_without_lens_one_is_confirmed_by_lens_two(streams):
    """Lens 1 not asked: the rule stands for it, lens 2's REAL confirms, the note says why."""
    bandit = ReviewerStream.objects.create(
        round=streams["security"].round, name="bandit", agent="bandit", kind="analyzer"
    )
    node = node_record(
        stream=bandit,
        payload=node_payload(),
        file_lines=FILES,
        evidence={"tool": "bandit", "rule": "B602", "high_precision": False},
    ).node
    answers = _answers([node], LensVerdict.REAL, lenses=("false_positive", "severity"))
    [outcome] = node_panel_apply(nodes=[node], answers=answers).values()
    node.refresh_from_db()
    assert outcome.status.value == "confirmed" and node.status == "consensus_ready"
    assert node.tags.panel_lenses == ["false_positive", "severity"]
    assert node.tags.panel_note.endswith(
        "reachability not asked of a model: the analyzer's rule B602 matched"
    )
    assert set(node.confirmations.values_list("agent", flat=True)) == {
        "lens-false_positive",
        "lens-severity",
    }


def test_a_recommendation_the_panel_lifts_to_p1_is_stored_as_a_bug(streams):
    """Lens 3 rates a P3 recommendation high: the stored finding is a P1 bug, not a P1
    recommendation, and its note says why."""
    [node] = [
        node_record(
            stream=streams["security"],
            payload=node_payload(
                type="recommendation",
                priority="P3",
                triage={"category": "security", "severity": "low", "effort": "small"},
                title="Check the input",
            ),
            file_lines=FILES,
        ).node
    ]
    node_panel_apply(nodes=[node], answers=_answers([node], LensVerdict.REAL))
    node.refresh_from_db()
    assert (node.priority, node.type) == ("P1", "bug")
    assert "a recommendation at P1 is a bug" in node.tags.panel_note
