"""A proposed ticket's state in words and what it allows (reviews/domain/tickets.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.tickets import BODY_MAX, TITLE_MAX, clean_issue, issue_body, ticket_state

APPROVAL_STATES = [
    "pending",
    "approved",
    "executing",
    "executed",
    "denied",
    "expired",
    "cancelled",
    "failed",
    None,
]


def test_an_open_ticket_may_be_dismissed_or_filed():
    state = ticket_state("open")
    assert (state.label, state.may_dismiss, state.may_request_issue) == ("proposed", True, True)


@pytest.mark.parametrize("status", ["dismissed", "created"])
@pytest.mark.parametrize("request_status", APPROVAL_STATES)
def test_a_decided_ticket_allows_nothing_more(status, request_status):
    state = ticket_state(status, request_status=request_status, request_id=3)
    assert not state.may_dismiss and not state.may_request_issue


@pytest.mark.parametrize(
    ("request_status", "label"),
    [
        ("pending", "issue request #3 waiting for an approver"),
        ("approved", "issue request #3 being filed"),
        ("executing", "issue request #3 being filed"),
    ],
)
def test_while_the_request_is_on_its_way_nothing_else_is_offered(request_status, label):
    state = ticket_state("requested", request_status=request_status, request_id=3)
    assert (state.label, state.may_dismiss, state.may_request_issue) == (label, False, False)


@pytest.mark.parametrize("request_status", ["denied", "expired", "cancelled", "failed"])
def test_a_request_that_filed_nothing_gives_the_ticket_back(request_status):
    state = ticket_state("requested", request_status=request_status, request_id=3)
    assert state.label == f"proposed (issue request #3 {request_status})"
    assert state.may_dismiss and state.may_request_issue


@given(
    st.sampled_from(["open", "dismissed", "requested", "created"]), st.sampled_from(APPROVAL_STATES)
)
def test_at_most_one_way_forward_at_a_time(status, request_status):
    """Filing and dismissing are offered together or not at all, and never once decided."""
    state = ticket_state(status, request_status=request_status, request_id=1)
    assert state.may_dismiss == state.may_request_issue
    assert state.label


@given(st.text(max_size=300), st.text(max_size=200))
def test_a_cleaned_issue_is_one_github_accepts(title, body):
    try:
        clean_title, clean_body = clean_issue(title, body)
    except ValueError as exc:
        assert str(exc)
        return
    assert clean_title and clean_title == clean_title.strip() and "\n" not in clean_title
    assert len(clean_title) <= TITLE_MAX and len(clean_body) <= BODY_MAX


def test_issue_input_errors_say_why():
    with pytest.raises(ValueError, match="needs a title"):
        clean_issue("   ", "body")
    with pytest.raises(ValueError, match="at most 256"):
        clean_issue("x" * 257, "")
    with pytest.raises(ValueError, match="at most 65536"):
        clean_issue("t", "x" * 65_537)


def test_the_issue_body_says_where_the_ticket_came_from():
    body = issue_body("Do it.\n", reviewer="security", pull_request="acme/app#5", round_number=2)
    assert (
        body
        == "Do it.\n\n---\nProposed by the security reviewer while reviewing acme/app#5 (round 2)."
    )


def test_no_ticket_move_outside_the_table_is_accepted():
    from reviews.domain.tickets import TRANSITIONS, TicketStatus, sources_of
    from reviews.models import ReviewerTicket

    assert {s.value for s in TicketStatus} == set(ReviewerTicket.Status.values)
    assert set(TRANSITIONS) == set(TicketStatus)
    for new in TicketStatus:
        assert sources_of(new) == {old for old in TicketStatus if new in TRANSITIONS[old]}
        # A filed or dismissed ticket is decided for good.
        assert TicketStatus.CREATED not in sources_of(new)
        assert TicketStatus.DISMISSED not in sources_of(new)
    # The ladder of what the page offers agrees: a ticket that may be dismissed may move there.
    for status in TicketStatus:
        if ticket_state(status).may_dismiss:
            assert TicketStatus.DISMISSED in TRANSITIONS[status]
        if ticket_state(status).may_request_issue:
            assert TicketStatus.REQUESTED in TRANSITIONS[status]
