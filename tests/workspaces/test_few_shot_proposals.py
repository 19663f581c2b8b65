"""Few-shots proposed from people's decisions, on the reviewer's settings page and in the API:
what is proposed (and what not), redacted and bounded; an admin accepts, edits or rejects, each
audited; everyone else is refused; a bad input is a clear error that changes nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from guardrails.models import AuditEvent
from reviews.models import ReviewNode, ReviewRound
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm_by_person, node_dismiss, node_reopen, node_resolve
from tests.fixtures import PASSWORD, node_payload
from workspaces.models import FewShotProposal, ReviewerConfig

pytestmark = pytest.mark.django_db

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2  # a GitHub token's shape: redacted
DIFF = f"""\
diff --git a/app/views.py b/app/views.py
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/app/views.py
@@ -0,0 +1,14 @@
+import os
+
+TOKEN = "{TOKEN}"
+
+
+def total(request, order_id):
+    order = Order.objects.get(pk=order_id)
+    return order.total
+
+
+def n(x):
+    return x
+
+LIMIT = 10
"""


def _finding(stream, line, title, *, priority="P1", category="security", body="Fix it."):
    severity = {"P0": "critical", "P1": "high", "P2": "medium", "P3": "low"}[priority]
    return node_record(
        stream=stream,
        payload=node_payload(
            priority=priority,
            title=title,
            body=body,
            triage={"category": category, "severity": severity, "effort": "small"},
            anchor={"path": "app/views.py", "start_line": line, "end_line": line},
        ),
        file_lines={"app/views.py": 14},
    ).node


@pytest.fixture
def decided(review_factory, stream_factory, workspace, alice, settings, tmp_path):
    """The quality reviewer's findings on a round whose diff has a token, decided by alice:
    one dismissed with a reason, one resolved, one confirmed, one dismissed without a reason."""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    review_round = review_factory(workspace=workspace)
    ReviewRound.objects.filter(pk=review_round.pk).update(diff=DIFF)
    stream = stream_factory(review_round, "quality")
    token = _finding(stream, 3, "Token committed in code", body="Read it from the environment.")
    perm = _finding(stream, 7, "Any caller reads any order", body="Check the user first.")
    name = _finding(stream, 11, "Unclear name", priority="P3", category="maintainability")
    limit = _finding(stream, 14, "Magic number", priority="P3", category="maintainability")
    node_dismiss(node=token, user=alice, reason="A revoked fixture token the tests need.")
    node_resolve(node=perm, user=alice, reason="")
    node_confirm_by_person(node=name, user=alice, reason="n says nothing")
    node_dismiss(node=limit, user=alice, reason="")
    return {"token": token, "perm": perm, "name": name, "limit": limit}


def _page(workspace, key="quality"):
    return f"/w/{workspace.slug}/settings/reviewers/{key}/"


def _waiting(key="quality"):
    return {
        p.source_node_id: p
        for p in FewShotProposal.objects.filter(reviewer__key=key, status="proposed")
    }


def _form(proposal, action, **changes):
    prefix = f"proposal-{proposal.pk}"
    shot = {**proposal.shot(), **changes}
    return {"action": action, **{f"{prefix}-{k}": v for k, v in shot.items()}}


def _decide_url(workspace, proposal, key="quality"):
    return f"{_page(workspace, key)}proposals/{proposal.pk}/"


def test_the_page_proposes_the_decisions_with_their_code_redacted(
    decided, workspace, alice, client_for
):
    response = client_for(alice).get(_page(workspace))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Proposed few-shots" in html
    waiting = _waiting()
    # The dismissal without a reason teaches nothing; the three others are proposed.
    assert set(waiting) == {decided["token"].pk, decided["perm"].pk, decided["name"].pk}
    token = waiting[decided["token"].pk]
    assert token.kind == "bad" and token.outcome == "dismissed"
    assert token.bad == "Token committed in code. Read it from the environment."
    assert token.good == (
        "Not a finding here, as a person of the team decided: A revoked fixture token the "
        "tests need."
    )
    assert token.excerpt.splitlines()[0] == "app/views.py"
    assert '    3  TOKEN = "[REDACTED:github_token]"' in token.excerpt
    assert TOKEN not in token.excerpt and TOKEN not in html
    perm = waiting[decided["perm"].pk]
    assert perm.kind == "good" and not perm.bad
    assert perm.good == "P1 bug (security): Any caller reads any order. Check the user first."
    assert "    7      order = Order.objects.get(pk=order_id)" in perm.excerpt
    name = waiting[decided["name"].pk]
    assert name.outcome == "confirmed" and name.good.endswith(
        "(a person confirmed it: n says nothing)"
    )
    # The excerpt is the finding's lines and two around them, numbered as in the file.
    assert [row.split()[0] for row in perm.excerpt.splitlines()[1:]] == [
        "5",
        "6",
        "7",
        "8",
        "9",
    ]
    # Opening the page again proposes nothing twice; another reviewer gets nothing of these.
    client_for(alice).get(_page(workspace))
    assert FewShotProposal.objects.count() == 3
    client_for(alice).get(_page(workspace, "security"))
    assert not _waiting("security")


def test_an_admin_accepts_a_proposal_and_the_reviewer_has_it(decided, workspace, alice, client_for):
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["token"].pk]
    response = client.post(_decide_url(workspace, proposal), _form(proposal, "accept"))
    assert response.status_code == 302
    assert response["Location"].endswith("#few-shot-proposals")
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert config.few_shots[-1] == proposal.shot()
    proposal.refresh_from_db()
    assert proposal.status == "accepted" and proposal.decided_by == alice
    event = AuditEvent.objects.get(action="reviewers.few_shot_accepted")
    assert event.actor_id == alice.pk
    assert event.payload["proposal"] == proposal.pk and event.payload["edited"] is False
    assert event.payload["finding"] == decided["token"].pk
    assert event.payload["few_shot"] == proposal.shot()
    # Accepted, it no longer waits, and its finding is not proposed again.
    page = client.get(_page(workspace)).content.decode()
    assert f'id="proposal-{proposal.pk}"' not in page
    assert decided["token"].pk not in _waiting()


def test_an_admin_edits_then_accepts_the_edited_text_each_audited(
    decided, workspace, alice, client_for
):
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["perm"].pk]
    edited = "P1: a view that reads an order checks the user may see it."
    response = client.post(_decide_url(workspace, proposal), _form(proposal, "edit", good=edited))
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "proposed" and proposal.good == edited
    event = AuditEvent.objects.get(action="reviewers.few_shot_edited")
    assert event.payload["after"]["good"] == edited
    assert event.payload["before"]["good"].startswith("P1 bug (security)")
    # Accepting with another change: the accepted text is what the admin sent.
    final = edited + " Name the check."
    client.post(_decide_url(workspace, proposal), _form(proposal, "accept", good=final))
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert config.few_shots[-1]["good"] == final
    accepted = AuditEvent.objects.get(action="reviewers.few_shot_accepted")
    assert accepted.payload["edited"] is True and accepted.payload["proposed"]["good"] == edited


def test_a_rejected_proposal_is_audited_and_never_proposed_again(
    decided, workspace, alice, client_for
):
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["name"].pk]
    response = client.post(_decide_url(workspace, proposal), {"action": "reject"})
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "rejected"
    assert AuditEvent.objects.get(action="reviewers.few_shot_rejected").payload["finding"] == (
        decided["name"].pk
    )
    client.get(_page(workspace))
    assert decided["name"].pk not in _waiting()
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert all("Unclear name" not in s["good"] for s in config.few_shots)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"good": "  "}, "A few-shot needs both a code excerpt and a good verdict."),
        ({"good": "x" * 2001}, "at most 2000"),
        ({"excerpt": ""}, "A few-shot needs both a code excerpt and a good verdict."),
        ({"excerpt": "a\x00b"}, "Null characters are not allowed."),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    decided, workspace, alice, client_for, changes, message
):
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["perm"].pk]
    before = proposal.shot()
    response = client.post(_decide_url(workspace, proposal), _form(proposal, "accept", **changes))
    assert response.status_code == 400
    assert message in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "proposed" and proposal.shot() == before
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert config.few_shots == []
    assert not AuditEvent.objects.filter(action__startswith="reviewers.few_shot").exists()


def test_an_unknown_action_and_a_decided_proposal_are_refused_in_words(
    decided, workspace, alice, client_for
):
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["perm"].pk]
    response = client.post(
        _decide_url(workspace, proposal), _form(proposal, "approve"), follow=True
    )
    assert (
        "Unknown action &#x27;approve&#x27;; use accept, edit, reject." in response.content.decode()
    )
    client.post(_decide_url(workspace, proposal), {"action": "reject"})
    response = client.post(_decide_url(workspace, proposal), _form(proposal, "accept"), follow=True)
    assert "This proposal was already rejected by alice@example.com." in response.content.decode()
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").few_shots == []


@pytest.mark.parametrize("role", ["approver", "reviewer", "viewer"])
def test_only_an_admin_sees_and_decides_proposals(
    decided, workspace, alice, client_for, member_factory, role
):
    client_for(alice).get(_page(workspace))
    proposal = _waiting()[decided["token"].pk]
    client = client_for(member_factory(workspace, role))
    page = client.get(_page(workspace)).content.decode()
    assert "Proposed few-shots" not in page and "[REDACTED" not in page
    for action in ("accept", "edit", "reject"):
        response = client.post(_decide_url(workspace, proposal), _form(proposal, action))
        assert response.status_code == 403
    api = f"/api/v1/workspaces/{workspace.slug}/reviewers/quality/few-shot-proposals"
    assert client.get(api).status_code == 403
    response = client.post(f"{api}/{proposal.pk}", {"action": "accept"}, "application/json")
    assert response.status_code == 403
    assert "needs admin" in response.json()["detail"]
    proposal.refresh_from_db()
    assert proposal.status == "proposed"
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").few_shots == []
    denied = AuditEvent.objects.filter(action="permission.denied", workspace=workspace)
    assert denied.filter(payload__attempted="decide proposed few-shots").count() == 4
    assert denied.filter(payload__attempted="read proposed few-shots").count() == 1


def test_an_outsider_gets_404_and_a_post_without_csrf_is_refused(
    decided, workspace, alice, charlie, client_for
):
    client_for(alice).get(_page(workspace))
    proposal = _waiting()[decided["token"].pk]
    outsider = client_for(charlie)
    assert outsider.post(_decide_url(workspace, proposal), {"action": "reject"}).status_code == 404
    strict = Client(enforce_csrf_checks=True)
    assert strict.login(username=alice.username, password=PASSWORD)
    assert strict.post(_decide_url(workspace, proposal), {"action": "reject"}).status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == "proposed"


def test_a_proposal_of_another_reviewer_is_not_found_under_this_one(
    decided, workspace, alice, client_for
):
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["token"].pk]
    response = client.post(_decide_url(workspace, proposal, "security"), {"action": "reject"})
    assert response.status_code == 404


def test_reopening_a_finding_withdraws_its_waiting_proposal(decided, workspace, alice, client_for):
    client = client_for(alice)
    client.get(_page(workspace))
    assert decided["perm"].pk in _waiting()
    node_reopen(node=ReviewNode.objects.get(pk=decided["perm"].pk), user=alice)
    client.get(_page(workspace))
    assert decided["perm"].pk not in _waiting()
    # Decided again, it is proposed again.
    node_resolve(node=ReviewNode.objects.get(pk=decided["perm"].pk), user=alice, reason="done")
    client.get(_page(workspace))
    assert _waiting()[decided["perm"].pk].good.endswith("(a person resolved it: done)")


def test_at_most_five_wait_and_the_next_comes_when_one_is_decided(
    review_factory, stream_factory, workspace, alice, client_for
):
    review_round = review_factory(workspace=workspace)
    ReviewRound.objects.filter(pk=review_round.pk).update(diff=DIFF)
    stream = stream_factory(review_round, "quality")
    for line in range(1, 15):
        node = _finding(stream, line, f"Finding on line {line}", priority="P3")
        node_resolve(node=node, user=alice)
    client = client_for(alice)
    client.get(_page(workspace))
    waiting = _waiting()
    assert len(waiting) == 5
    client.post(_decide_url(workspace, next(iter(waiting.values()))), {"action": "reject"})
    client.get(_page(workspace))
    assert len(_waiting()) == 5
    assert FewShotProposal.objects.count() == 6


def test_a_full_reviewer_refuses_another_few_shot_in_words(decided, workspace, alice, client_for):
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    config.few_shots = [{"excerpt": f"x = {i}", "good": "fine", "bad": ""} for i in range(50)]
    config.save()
    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["token"].pk]
    response = client.post(_decide_url(workspace, proposal), _form(proposal, "accept"), follow=True)
    assert "Quality already has 50 few-shots, the most a reviewer keeps" in (
        response.content.decode()
    )
    proposal.refresh_from_db()
    assert proposal.status == "proposed"
    assert len(ReviewerConfig.objects.get(pk=config.pk).few_shots) == 50


def test_the_api_lists_accepts_with_an_edit_and_refuses_a_second_decision(
    decided, workspace, alice, client_for
):
    client = client_for(alice)
    api = f"/api/v1/workspaces/{workspace.slug}/reviewers/quality/few-shot-proposals"
    listed = client.get(api)
    assert listed.status_code == 200, listed.content
    rows = {row["finding"]: row for row in listed.json()}
    assert set(rows) == {decided["token"].pk, decided["perm"].pk, decided["name"].pk}
    token = rows[decided["token"].pk]
    assert token["kind"] == "bad" and token["outcome"] == "dismissed"
    assert token["review"] == decided["token"].space_id and token["reviewer"] == "quality"
    assert "[REDACTED:github_token]" in token["few_shot"]["excerpt"]
    assert TOKEN not in listed.content.decode()
    shot = {**token["few_shot"], "good": "Fixture tokens are revoked; do not flag them."}
    answer = client.post(
        f"{api}/{token['id']}", {"action": "accept", "few_shot": shot}, "application/json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "accepted" and answer.json()["few_shot"] == shot
    assert ReviewerConfig.objects.get(workspace=workspace, key="quality").few_shots == [shot]
    again = client.post(f"{api}/{token['id']}", {"action": "reject"}, "application/json")
    assert again.status_code == 409
    assert again.json()["code"] == "proposal_decided"
    perm = rows[decided["perm"].pk]
    bad = client.post(
        f"{api}/{perm['id']}",
        {"action": "accept", "few_shot": {**perm["few_shot"], "good": ""}},
        "application/json",
    )
    assert bad.status_code == 422
    odd = client.post(
        f"{api}/{perm['id']}",
        {"action": "reject", "few_shot": perm["few_shot"]},
        "application/json",
    )
    assert odd.status_code == 400 and "A rejection takes no few_shot" in odd.json()["detail"]
    edit = client.post(f"{api}/{perm['id']}", {"action": "edit"}, "application/json")
    assert edit.status_code == 400 and "needs its excerpt and good verdict" in edit.json()["detail"]


def test_deleting_a_repositorys_reviews_for_good_takes_their_proposals(
    decided, workspace, alice, client_for
):
    """A proposal holds code of a review: it goes with the review; an accepted few-shot stays
    (the admin made it the reviewer's)."""
    from workspaces import services
    from workspaces.models import Membership

    client = client_for(alice)
    client.get(_page(workspace))
    proposal = _waiting()[decided["token"].pk]
    client.post(_decide_url(workspace, proposal), _form(proposal, "accept"))
    repo = decided["token"].space.pull_request.repository
    services.repository_archive(repository=repo, actor=alice)
    owner = Membership.objects.get(workspace=workspace, user=alice)
    services.repository_purge(repository=repo, actor=owner, typed_name=str(repo))
    assert not FewShotProposal.objects.exists()
    config = ReviewerConfig.objects.get(workspace=workspace, key="quality")
    assert config.few_shots == [proposal.shot()]
