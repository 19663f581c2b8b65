"""The finaliser persists a verdict computed from every stream of the round."""

from __future__ import annotations

from reviews.domain.types import AxisName, AxisResult
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload


def test_it_gathers_the_nodes_of_every_stream(review_factory, stream_factory):
    review_round = review_factory()
    quiet = stream_factory(review_round, "quality")
    loud = stream_factory(review_round, "security")
    node_record(stream=quiet, payload=node_payload(priority="P3", title="Naming"))
    node_record(
        stream=loud, payload=node_payload(priority="P0", confidence=0.82, title="Token leak")
    )
    verdict = round_finalise(review_round=review_round)
    assert verdict.level == "block"
    assert "0.82" in verdict.rule


def test_a_gated_failing_axis_forces_block_and_unavailable_forces_hold(
    review_factory, stream_factory
):
    review_round = review_factory()
    ws = review_round.space.workspace
    assert ws.gated_axes == ["apiContract"]
    stream = stream_factory(review_round, "quality")
    node_record(stream=stream, payload=node_payload(priority="P3"))
    assert round_finalise(review_round=review_round).level == "hold"  # apiContract never ran
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.FAIL,
        source="deterministic",
    )
    verdict = round_finalise(review_round=review_round)
    assert verdict.level == "block" and "apiContract" in verdict.rule
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.PASS,
        source="deterministic",
    )
    assert round_finalise(review_round=review_round).level == "ship"
