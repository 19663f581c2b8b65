"""The reviews list and the guided review tab."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.models import AuditEvent
from reviews.domain.finding_groups import CARDS_PER_GROUP
from reviews.domain.types import AxisName, AxisResult
from reviews.models import MemoryFact, ReviewNode
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload

HTMX = {"HTTP_HX_REQUEST": "true"}


def _seed(review_round, stream_factory, count=4):
    impl = stream_factory(review_round, "implementation")
    qual = stream_factory(review_round, "quality")
    nodes = []
    for i in range(count):
        stream = impl if i % 2 else qual
        payload = node_payload(
            title=f"Finding {i}",
            priority=f"P{i % 4}",
            confidence=0.9,
            anchor={"path": f"pkg/m{i}.py", "start_line": 1, "end_line": 1},
        )
        nodes.append(node_record(stream=stream, payload=payload).node)
    node_confirm(node=nodes[0], by_agent="implementation")
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.UNAVAILABLE,
        source="deterministic",
        details={"reason": "no public API found"},
    )
    round_finalise(review_round=review_round)
    return nodes


@pytest.fixture
def seeded(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace, tier="light")
    return review_round, _seed(review_round, stream_factory)


def test_the_list_shows_status_verdict_and_counts(seeded, workspace, alice, client_for):
    review_round, _ = seeded
    html = client_for(alice).get(f"/w/{workspace.slug}/reviews/").content.decode()
    assert f"/w/{workspace.slug}/reviews/{review_round.space_id}/" in html
    assert "✖ Block" in html  # P0 at 0.9
    assert "P0 1" in html and "P1 1" in html and "P3 1" in html
    filtered = client_for(alice).get(f"/w/{workspace.slug}/reviews/?verdict=ship").content.decode()
    assert f"/reviews/{review_round.space_id}/" not in filtered


def test_the_review_page_shows_verdict_axes_findings_and_threshold(
    seeded, workspace, alice, client_for
):
    review_round, _nodes = seeded
    html = (
        client_for(alice)
        .get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
        .content.decode()
    )
    assert "✖ Block" in html and "Why:" in html and "P0 at 0.90: Finding 0" in html
    assert "apiContract" in html and "unavailable" in html and "no public API found" in html
    # light tier: P0-P1 in the main list, P2-P3 grouped below and counted.
    main, below = html.split('class="below-threshold"')
    assert "Finding 0" in main and "Finding 1" in main
    assert "Finding 2" in below and "Finding 3" in below
    assert "2 more below the light tier" in html
    assert "Confirmed by implementation" in html
    assert 'ws-connect="/ws/reviews/' in html


def test_a_reviewer_dismisses_with_htmx_and_gets_the_updated_card(
    seeded, workspace, member_factory, client_for
):
    review_round, nodes = seeded
    reviewer = member_factory(workspace, "reviewer")
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{nodes[1].pk}/"
    response = client_for(reviewer).post(
        url, {"action": "dismiss", "reason": "handled upstream"}, **HTMX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith("<article") and "node-dismissed" in html
    assert ">Reopen</button>" in html
    assert ReviewNode.objects.get(pk=nodes[1].pk).status == "dismissed"
    assert "handled upstream" in MemoryFact.objects.get().statement


def test_a_viewer_sees_no_actions_and_is_refused_and_audited(
    seeded, workspace, member_factory, client_for
):
    review_round, nodes = seeded
    viewer = member_factory(workspace, "viewer")
    client = client_for(viewer)
    html = client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/").content.decode()
    assert ">Dismiss</button>" not in html and ">Resolve</button>" not in html
    assert "Start review" not in client.get(f"/w/{workspace.slug}/reviews/").content.decode()
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{nodes[1].pk}/"
    assert client.post(url, {"action": "dismiss"}).status_code == 403
    assert ReviewNode.objects.get(pk=nodes[1].pk).status == "open"
    assert AuditEvent.objects.filter(action="permission.denied", actor_id=viewer.pk).exists()


def test_an_outsider_gets_404_for_the_review_and_its_nodes(seeded, workspace, charlie, client_for):
    review_round, nodes = seeded
    client = client_for(charlie)
    assert client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/").status_code == 404
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{nodes[1].pk}/"
    assert client.post(url, {"action": "dismiss"}).status_code == 404


def test_the_report_is_viewable_and_downloadable(seeded, workspace, alice, client_for):
    review_round, _ = seeded
    client = client_for(alice)
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/report.md"
    response = client.get(url)
    text = response.content.decode()
    assert response["Content-Type"].startswith("text/markdown")
    assert text.startswith("# Review: BLOCKED")
    for section in (
        "## Reviewers",
        "## Issues",
        "### Critical",
        "## Disagreements",
        "## Positive notes",
        "## Summary",
    ):
        assert section in text
    assert "attachment" in client.get(url + "?download=1")["Content-Disposition"]


@pytest.mark.parametrize("sizes", [(10, 1000)])
def test_the_review_page_renders_in_constant_queries(
    review_factory, stream_factory, workspace_factory, alice, client_for, member_factory, sizes
):
    counts = []
    for size in sizes:
        ws = workspace_factory()
        member_factory(ws, "reviewer", f"r{size}@example.com")
        review_round = review_factory(ws)
        _seed(review_round, stream_factory, count=size)
        from workspaces.models import Membership

        user = Membership.objects.get(workspace=ws, role="reviewer").user
        client = client_for(user)
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(f"/w/{ws.slug}/reviews/{review_round.space_id}/")
        assert response.status_code == 200
        # The first render is bounded: at most CARDS_PER_GROUP cards in each priority's group.
        shown = response.content.decode().count('<article class="node')
        assert shown == sum(min(len(range(p, size, 4)), CARDS_PER_GROUP) for p in range(4))
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts


@pytest.mark.parametrize("via", ["page", "api"])
def test_supplying_the_request_to_a_review_without_a_round_is_refused_clearly(
    via, workspace, alice, client_for
):
    """A space whose rounds are all gone has no round to take the original request: the API
    answers 409 and the page returns to the review saying so, instead of failing on a missing
    round."""
    from reviews.models import ReviewRound
    from reviews.services.spaces import pull_request_upsert, space_get_or_create
    from workspaces.models import Repository

    repo = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/empty")
    pr = pull_request_upsert(
        repository=repo, number=3, base_ref="main", head_ref="f", head_sha="c" * 40
    )
    space = space_get_or_create(pull_request=pr)
    assert not ReviewRound.objects.filter(space=space).exists()
    client = client_for(alice)
    if via == "page":
        response = client.post(
            f"/w/{workspace.slug}/reviews/{space.pk}/request/",
            {"original_request": "Add X"},
            follow=True,
        )
        assert response.redirect_chain[-1][0] == f"/w/{workspace.slug}/reviews/{space.pk}/"
        assert "This review has no round yet." in [str(m) for m in response.context["messages"]]
    else:
        response = client.post(
            f"/api/v1/workspaces/{workspace.slug}/reviews/{space.pk}/requirements",
            {"original_request": "Add X"},
            content_type="application/json",
        )
        assert response.status_code == 409
        assert response.json()["detail"] == "This review has no round yet."
