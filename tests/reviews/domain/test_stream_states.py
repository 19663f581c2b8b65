"""A reviewer stream's and a pipeline step's states: the tables their one writers apply."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain import step_states, stream_states
from reviews.domain.round_states import RoundState
from reviews.domain.step_states import StepState
from reviews.domain.stream_states import StreamState
from reviews.models import PipelineStep, ReviewerStream

streams = st.sampled_from(list(StreamState))
steps = st.sampled_from(list(StepState))


def test_the_tables_cover_the_model_states() -> None:
    assert {s.value for s in StreamState} == set(ReviewerStream.State.values)
    assert set(stream_states.TRANSITIONS) == set(StreamState)
    assert {s.value for s in StepState} == set(PipelineStep.State.values)
    assert set(step_states.TRANSITIONS) == set(StepState)
    assert [s for s in StreamState if s.terminal] == [StreamState.DONE]
    assert {s for s in StepState if s.terminal} == {
        StepState.DONE,
        StepState.FAILED,
        StepState.SUPERSEDED,
        StepState.CANCELLED,
    }
    assert set(step_states.TERMINAL) == {s for s in StepState if s.terminal}


@given(streams, streams)
def test_no_stream_move_outside_the_table_is_accepted(old: StreamState, new: StreamState) -> None:
    allowed = stream_states.may_move(old, new)
    assert allowed == (new in stream_states.TRANSITIONS[old])
    if old is StreamState.DONE:
        assert not allowed  # nothing overwrites a finished reviewer's result
    if new in (StreamState.DONE, StreamState.FAILED, StreamState.SKIPPED) and allowed:
        assert old is StreamState.RUNNING  # a stream ends only by running
    if new is StreamState.PENDING and allowed:
        assert old is StreamState.SKIPPED  # only a process block waits again


@given(streams)
def test_stream_sources_are_the_inverse_of_the_table(new: StreamState) -> None:
    assert stream_states.sources_of(new) == {
        old for old in StreamState if stream_states.may_move(old, new)
    }


@given(steps, steps)
def test_no_step_move_outside_the_table_is_accepted(old: StepState, new: StepState) -> None:
    allowed = step_states.may_move(old, new)
    if old.terminal:
        assert not allowed
    if new.terminal and allowed:
        assert old is StepState.RUNNING  # an outcome is recorded by the run that holds it


@given(steps)
def test_step_sources_are_the_inverse_of_the_table(new: StepState) -> None:
    assert step_states.sources_of(new) == {
        old for old in StepState if step_states.may_move(old, new)
    }


@given(st.sampled_from(list(RoundState)))
def test_a_step_of_an_ended_round_ends_as_its_round_did(ended: RoundState) -> None:
    """Superseded and cancelled rounds leave their steps superseded and cancelled; only a
    failed round (or one that ended otherwise) leaves them failed."""
    outcome = step_states.closed_outcome(ended)
    assert outcome.terminal and outcome is not StepState.DONE
    assert step_states.may_move(StepState.RUNNING, outcome)
    if ended in (RoundState.SUPERSEDED, RoundState.CANCELLED):
        assert outcome.value == ended.value
    else:
        assert outcome is StepState.FAILED
