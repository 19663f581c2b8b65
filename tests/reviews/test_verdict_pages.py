"""A person's decisions move the verdict everywhere it is read: the review page, the list, the
JSON, the report and the publish preview, which all say what decided it (issue 11, item 5)."""

from __future__ import annotations

from reviews.models import NodeConfirmation, ReviewNode, VerdictChange
from reviews.services.nodes import node_resolve
from reviews.services.publishing import publish_review

HTMX = {"HTTP_HX_REQUEST": "true"}


def test_confirm_resolve_and_an_axis_move_every_reading_of_the_verdict(
    publishable, workspace, client_for, member_factory
):
    space, review_round, bob, _vera = publishable
    node = ReviewNode.objects.get(round=review_round)
    client = client_for(bob)
    base = f"/w/{workspace.slug}/reviews/{space.pk}/"
    page = client.get(base).content.decode()
    assert ">Confirm</button>" in page and "Publishing now would post <strong>COMMENT" in page

    # A reviewer confirms from the page: the node is consensus-ready and the rule says so.
    card = client.post(f"{base}nodes/{node.pk}/", {"action": "confirm"}, **HTMX)
    assert card.status_code == 200 and "consensus_ready" in card.content.decode()
    assert NodeConfirmation.objects.get(node=node).agent == f"person:{bob.pk}"
    preview = client.get(f"{base}publish/").content.decode()
    # The preview renders the markdown GitHub will render.
    assert (
        "<strong>Why Hold:</strong> P1: SQL built from user input (calc.py:3), confirmed by a person"
        in (preview)
    )

    # Resolved, the only thing left is the gated axis nobody computed: Hold, and it says why.
    client.post(f"{base}nodes/{node.pk}/", {"action": "resolve"})
    page = client.get(base).content.decode()
    assert "gated axis apiContract is unavailable: submit it from CI or un-gate it" in page
    assert '<span class="conf">' not in page.split('id="review-header"')[1].split("</section>")[0]
    report = client.get(f"{base}report.md").content.decode()
    assert "(no confidence stated: decided by missing data)" in report
    assert "(confidence 1.00)" not in report

    # The CI result arrives through the API: Ship everywhere.
    api = f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}"
    submitted = client.post(
        f"{api}/axes/apiContract", {"result": "pass"}, content_type="application/json"
    )
    assert submitted.status_code == 201
    assert client.get(api).json()["verdict"]["level"] == "ship"
    listing = client.get(f"/w/{workspace.slug}/reviews/").content.decode()
    assert "✓ Ship" in listing
    assert client.get(f"/api/v1/workspaces/{workspace.slug}/reviews").json()[0]["verdict"] == (
        "ship"
    )
    assert client.get(f"{base}report.md").content.decode().startswith("# Review: APPROVED")
    preview = client.get(f"{base}publish/").content.decode()
    assert "event <strong>APPROVE</strong> (verdict Ship)" in preview
    assert "<strong>Why Ship:</strong> no open P0 or P1 finding" in preview

    page = client.get(base).content.decode()
    assert "Verdict changes" in page and f"by {bob.email}" in page
    changes = [(c.old_level, c.new_level, c.actor_id) for c in VerdictChange.objects.all()]
    assert changes == [("hold", "hold", bob.pk), ("hold", "hold", bob.pk), ("hold", "ship", bob.pk)]


def test_confirming_follows_the_roles_in_the_page_and_the_api(
    publishable, workspace, client_for, member_factory
):
    space, review_round, _bob, _vera = publishable
    node = ReviewNode.objects.get(round=review_round)
    viewer = member_factory(workspace, "viewer")
    page = client_for(viewer).get(f"/w/{workspace.slug}/reviews/{space.pk}/").content.decode()
    assert ">Confirm</button>" not in page
    url = f"/w/{workspace.slug}/reviews/{space.pk}/nodes/{node.pk}/"
    assert client_for(viewer).post(url, {"action": "confirm"}).status_code == 403
    api = f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/nodes/{node.pk}/confirm"
    assert client_for(viewer).post(api, {}, content_type="application/json").status_code == 403
    reviewer = member_factory(workspace, "reviewer")
    ok = client_for(reviewer).post(api, {"reason": "seen it"}, content_type="application/json")
    assert ok.json() == {"id": node.pk, "status": "consensus_ready"}
    assert not NodeConfirmation.objects.filter(node=node).exclude(agent=f"person:{reviewer.pk}")


def test_the_posted_review_says_what_decided_the_verdict(publishable, fake_github, workspace):
    """A Hold caused by a gated axis nobody computed says so on GitHub, with what clears it,
    and no confidence figure is posted for it."""
    space, review_round, bob, _vera = publishable
    node_resolve(node=ReviewNode.objects.get(round=review_round), user=bob)
    record = publish_review(space=space, selection="all_open", approve_on_ship=False, actor=bob)
    assert record.state == "posted"
    (posted,) = fake_github.reviews("acme", "app", 5)
    assert posted["body"].startswith(
        "## Quorum review: Hold\n\n**Why Hold:** gated axis apiContract is unavailable: submit it"
        " from CI or un-gate it in settings\n"
    )
    assert "1.00" not in posted["body"]
