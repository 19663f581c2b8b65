"""One error hierarchy, mapped to HTTP once for the API and once for pages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from config.application_errors import ApplicationError
from guardrails import rules as guard_rules
from reviews.domain import consensus
from reviews.domain.outcomes import PROCESS_BLOCK, is_process_block
from reviews.services.disagreements import DisagreementError
from reviews.services.flags import FlagError
from reviews.services.node_recording import node_record
from reviews.services.notes import TicketError
from reviews.services.publish_plans import AlreadyPublished, PublishError
from reviews.services.requests import ReviewRequestError
from reviews.services.rounds import ReviewQueuedError, RoundConflict, RoundError
from tests.fixtures import node_payload
from workspaces.rules import ReadOnlyError, RuleError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (RuleError, "rule_violation", 400),
        (ReadOnlyError, "repository_archived", 409),
        (consensus.ConsensusError, "transition_refused", 400),
        (consensus.TransitionError, "transition_refused", 400),
        (consensus.SelfConfirmationError, "self_confirmation", 400),
        (guard_rules.ApprovalError, "approval_refused", 400),
        (guard_rules.ApprovalExpired, "approval_expired", 400),
        (FlagError, "flag_conflict", 409),
        (ReviewRequestError, "review_refused", 400),
        (DisagreementError, "disagreement_refused", 400),
        (PublishError, "publish_refused", 400),
        (AlreadyPublished, "already_published", 409),
        (RoundError, "round_refused", 400),
        (RoundConflict, "round_conflict", 409),
        (TicketError, "ticket_refused", 400),
    ],
)
def test_every_user_facing_error_is_an_application_error(error, code, status):
    exc = error("Said to the user.")
    assert isinstance(exc, ApplicationError)
    assert (exc.message, exc.code, exc.http_status) == ("Said to the user.", code, status)
    assert exc.body() == {"detail": "Said to the user.", "code": code}


def test_a_raise_site_may_override_code_and_status():
    exc = consensus.TransitionError("No.", code="duplicate_node", http_status=409)
    assert (exc.code, exc.http_status) == ("duplicate_node", 409)
    assert consensus.TransitionError("No.").code == "transition_refused"  # the class is intact


def test_rule_error_stays_a_value_error():
    # Forms and older callers catch ValueError.
    assert issubclass(RuleError, ValueError)


def test_the_queue_error_carries_the_rounds_ids(review_factory):
    review_round = review_factory()
    body = ReviewQueuedError(review_round).body()
    assert body["code"] == "queue_unavailable"
    assert (body["space"], body["round"], body["state"]) == (
        review_round.space_id,
        review_round.number,
        review_round.state,
    )


def test_the_process_block_is_recognised_by_its_constant():
    assert is_process_block(PROCESS_BLOCK)
    assert not is_process_block("")
    assert not is_process_block("model timed out")


def test_expiry_is_a_type_not_a_phrase():
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 1, 1, tzinfo=UTC)
    machine = guard_rules.Approval(
        requester_id=1,
        head_sha="a",
        expires_at=now - timedelta(seconds=1),
        status=guard_rules.Status.APPROVED,
    )
    with pytest.raises(guard_rules.ApprovalExpired):
        guard_rules.check_executable(machine, current_head_sha="a", now=now)
    with pytest.raises(guard_rules.ApprovalError) as other:
        guard_rules.check_executable(machine, current_head_sha="b", now=now - timedelta(days=1))
    assert not isinstance(other.value, guard_rules.ApprovalExpired)


# -- the API: one handler ----------------------------------------------------------------------


@pytest.fixture
def open_node(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace)
    stream = stream_factory(review_round, "implementation")
    return node_record(stream=stream, payload=node_payload(priority="P2")).node


def test_the_api_answers_a_refusal_with_its_message_and_code(open_node, workspace, alice, client):
    client.force_login(alice)
    url = (
        f"/api/v1/workspaces/{workspace.slug}/reviews/{open_node.space_id}/nodes/"
        f"{open_node.pk}/reopen"
    )
    refused = client.post(url, {}, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["code"] == "transition_refused" and refused.json()["detail"]


def test_a_duplicate_is_refused_alike_by_the_page_and_the_api(
    open_node, stream_factory, workspace, alice, client
):
    from reviews.models import ReviewNode

    duplicate = node_record(
        stream=stream_factory(open_node.round, "security"),
        payload=node_payload(priority="P2", title="Another"),
    ).node
    ReviewNode.objects.filter(pk=duplicate.pk).update(duplicate_of=open_node)
    client.force_login(alice)
    api = client.post(
        f"/api/v1/workspaces/{workspace.slug}/reviews/{open_node.space_id}/nodes/"
        f"{duplicate.pk}/dismiss",
        {"reason": "x"},
        content_type="application/json",
    )
    assert api.status_code == 409 and api.json()["code"] == "duplicate_node"
    page = client.post(
        f"/w/{workspace.slug}/reviews/{open_node.space_id}/nodes/{duplicate.pk}/",
        {"action": "dismiss", "reason": "x"},
        HTTP_HX_REQUEST="true",
    )
    assert page.status_code == 409 and api.json()["detail"] in page.content.decode()
    duplicate.refresh_from_db()
    assert duplicate.status == "open"


# -- pages: htmx fragment, message and redirect, refusal page ----------------------------------


def test_an_htmx_refusal_is_a_fragment_aimed_at_the_error_region(
    open_node, workspace, alice, client
):
    client.force_login(alice)
    url = f"/w/{workspace.slug}/reviews/{open_node.space_id}/nodes/{open_node.pk}/"
    refused = client.post(url, {"action": "reopen"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400
    assert refused["HX-Retarget"] == "global #errors" and refused["HX-Reswap"] == "innerHTML"
    html = refused.content.decode()
    assert html.startswith('<p class="message message-error" role="alert">')
    # The region is on every page, and htmx is told to swap 400 and 409 answers.
    page = client.get(f"/w/{workspace.slug}/reviews/{open_node.space_id}/").content.decode()
    assert 'id="errors"' in page and '"code": "40[09]", "swap": true' in page
    assert "{#" not in page and "{% comment" not in page  # template comments stay comments


def test_a_plain_post_refusal_is_a_message_on_the_page_it_returns_to(
    open_node, workspace, alice, client
):
    client.force_login(alice)
    url = f"/w/{workspace.slug}/reviews/{open_node.space_id}/nodes/{open_node.pk}/"
    refused = client.post(url, {"action": "reopen"}, follow=True)
    assert refused.redirect_chain[-1][0] == f"/w/{workspace.slug}/reviews/{open_node.space_id}/"
    assert "message-error" in refused.content.decode()


def test_an_uncaught_refusal_is_the_refusal_page_with_its_status(
    open_node, workspace, alice, client
):
    client.force_login(alice)
    page = client.get(f"/w/{workspace.slug}/reviews/{open_node.space_id}/?round=x")
    assert page.status_code == 400
    assert "is not a round number" in page.content.decode()


# -- guard: no route converts an application error by hand -------------------------------------

API_MODULES = ("reviews/api/routes.py", "guardrails/api.py", "workspaces/api/routes.py")


def _by_hand(source: str) -> list[str]:
    """Routes that catch an error or raise ninja's HttpError themselves: the API's one
    exception handler (config/api.py) answers every ApplicationError."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            names = [
                n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "")
                for n in ast.walk(node.type)
            ]
            found += [f"except {n}" for n in names if n.endswith(("Error", "Published"))]
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", "")) == "HttpError"
        ):
            found.append("HttpError")
    return found


@pytest.mark.parametrize("module", API_MODULES)
def test_api_routes_leave_errors_to_the_one_handler(module):
    assert _by_hand((ROOT / module).read_text()) == []


def test_the_guard_catches_a_planted_conversion():
    planted = """
def route(request):
    try:
        service()
    except consensus.ConsensusError as exc:
        raise HttpError(400, str(exc)) from exc
"""
    assert _by_hand(planted) == ["except ConsensusError", "HttpError"]
