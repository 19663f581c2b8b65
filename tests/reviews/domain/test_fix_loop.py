"""The fix loop: the flag first, and no second round on a reviewed head on an agent's say-so."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.fix_loop import ASK_AGAIN, LoopState, admit_round, next_step
from reviews.domain.types import VerdictLevel

states = st.builds(
    LoopState,
    round_finished=st.booleans(),
    flagged=st.booleans(),
    flag_reason=st.text(max_size=40),
    waiting_for_request=st.booleans(),
    verdict=st.none() | st.sampled_from(list(VerdictLevel)),
    verdict_rule=st.text(max_size=40),
    fix_list=st.booleans(),
)
heads = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)


@given(states)
def test_a_flagged_review_never_suggests_another_round(state):
    step = next_step(state)
    if state.flagged:
        assert ASK_AGAIN not in step
        assert "Do not request another round" in step


@given(states)
def test_only_a_finished_unflagged_round_suggests_asking_again(state):
    if ASK_AGAIN in next_step(state):
        assert state.round_finished and not state.flagged


def test_the_process_block_asks_for_the_request_unless_flagged():
    waiting = LoopState(round_finished=True, flagged=False, waiting_for_request=True)
    assert "original request" in next_step(waiting)
    flagged = LoopState(
        round_finished=True, flagged=True, flag_reason="two rounds", waiting_for_request=True
    )
    assert next_step(flagged).startswith("This review is flagged for a person: two rounds.")


def test_a_block_with_findings_to_fix_asks_for_a_fix():
    state = LoopState(round_finished=True, flagged=False, verdict=VerdictLevel.BLOCK, fix_list=True)
    assert next_step(state).startswith("Fix the findings in fix_list")
    axis = LoopState(
        round_finished=True, flagged=False, verdict=VerdictLevel.HOLD, verdict_rule="apiContract"
    )
    assert "Nothing in fix_list" in next_step(axis)


@given(heads, st.sets(heads, max_size=3), st.booleans(), st.booleans())
def test_a_person_may_always_start_a_round(head, reviewed, flagged, changed):
    assert admit_round(
        head_sha=head,
        reviewed_heads=reviewed,
        flagged=flagged,
        by_person=True,
        request_changed=changed,
    ).allowed


@given(heads, st.sets(heads, max_size=3), st.booleans(), st.booleans())
def test_a_new_head_is_always_admitted(head, reviewed, flagged, changed):
    reviewed.discard(head)
    assert admit_round(
        head_sha=head,
        reviewed_heads=reviewed,
        flagged=flagged,
        by_person=False,
        request_changed=changed,
    ).allowed


@given(heads, st.booleans())
def test_an_agent_on_a_reviewed_head_needs_a_changed_request_and_no_flag(head, changed):
    unflagged = admit_round(
        head_sha=head,
        reviewed_heads={head},
        flagged=False,
        by_person=False,
        request_changed=changed,
    )
    assert unflagged.allowed is changed
    flagged = admit_round(
        head_sha=head, reviewed_heads={head}, flagged=True, by_person=False, request_changed=changed
    )
    assert not flagged.allowed
    assert head[:10] in flagged.reason and "flagged for a person" in flagged.reason
