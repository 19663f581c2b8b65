"""The guided-review selector loads a review in a constant number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviews.domain.types import AxisName, AxisResult
from reviews.selectors import review_page
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm
from reviews.services.rounds import round_start
from tests.fixtures import node_payload


def _populate(review_round, stream_factory, count: int) -> None:
    streams = [
        stream_factory(review_round, name) for name in ("implementation", "quality", "security")
    ]
    for i in range(count):
        stream = streams[i % 3]
        payload = node_payload(
            title=f"Finding number {i}",
            priority=f"P{i % 4}",
            anchor={
                "path": f"app/mod{i % 17}.py",
                "start_line": i % 50 + 1,
                "end_line": i % 50 + 1,
            },
        )
        node = node_record(stream=stream, payload=payload).node
        if i % 5 == 0:
            node_confirm(node=node, by_agent=streams[(i + 1) % 3].agent)
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.PASS,
        source="deterministic",
    )


def _count_queries(space) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as ctx:
        page = review_page(space=space)
        # Touch what a template touches.
        for node in page.nodes:
            _ = (
                node.stream.name,
                [c.agent for c in node.confirmations.all()],
                page.views[node.pk].active,
            )
    return len(ctx.captured_queries), page


@pytest.mark.parametrize("sizes", [(5, 500)])
def test_the_query_count_does_not_grow_with_the_number_of_nodes(
    review_factory, stream_factory, workspace_factory, sizes
):
    small, large = sizes
    counts = []
    for size in (small, large):
        review_round = review_factory(workspace_factory())
        _populate(review_round, stream_factory, size)
        # A second round so the delta query runs too.
        second = round_start(space=review_round.space, head_sha="d" * 40, tier="balanced")
        _populate(second, stream_factory, size)
        queries, page = _count_queries(review_round.space)
        assert len(page.nodes) == size
        counts.append(queries)
    assert counts[0] == counts[1]
    # rounds, streams, nodes, confirmations, axes, verdict, previous fingerprints
    assert counts[0] == 7


def test_the_page_carries_delta_disagreements_and_the_display_split(review_factory, stream_factory):
    review_round = review_factory(tier="light")
    impl = stream_factory(review_round, "implementation")
    qual = stream_factory(review_round, "quality")
    anchor = {"path": "app/views.py", "start_line": 3, "end_line": 3}
    node_record(stream=impl, payload=node_payload(priority="P0", type="bug", anchor=anchor))
    node_record(
        stream=qual,
        payload=node_payload(priority="P3", type="suggestion", anchor=anchor, title="Tidy this"),
    )
    page = review_page(space=review_round.space)
    assert len(page.disagreements) == 1
    assert [v.priority for v in page.display.main] == ["P0"]
    assert [v.priority for v in page.display.grouped_below] == ["P3"]

    # The delta compares with the last FINISHED round of a different head.
    from reviews.services.rounds import round_transition

    assert round_transition(review_round, "running") and round_transition(review_round, "finished")
    next_round = round_start(space=review_round.space, head_sha="e" * 40, tier="light")
    impl2 = stream_factory(next_round, "implementation")
    node_record(stream=impl2, payload=node_payload(priority="P0", type="bug", anchor=anchor))
    node_record(
        stream=impl2,
        payload=node_payload(
            title="Brand new issue", anchor={"path": "app/other.py", "start_line": 1, "end_line": 1}
        ),
    )
    page = review_page(space=review_round.space)
    assert page.round.pk == next_round.pk
    assert (len(page.delta.new), len(page.delta.persisting), len(page.delta.gone)) == (1, 1, 1)
    assert page.delta_view.summary == "since round 1: 1 new, 1 still open, 1 gone"
    assert [g.title for g in page.delta_view.gone] == ["Tidy this"]
    labels = {n.title: page.delta_view.label(n.fingerprint) for n in page.nodes}
    assert labels["Brand new issue"] == "new" and "still open" in labels.values()
    assert [(s.number, s.state_label) for s in page.round_summaries] == [
        (1, "Finished"),
        (2, "Queued"),
    ]
