"""The guided review page is bounded: a constant number of queries whatever the number of
findings, at most CARDS_PER_GROUP cards per group in the first render, the rest a page at a
time from the "more" endpoint, and the diff previews of later cohorts loaded when opened."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.domain.finding_groups import CARDS_PER_GROUP
from reviews.domain.round_stats import RoundStats
from reviews.models import ReviewNode
from reviews.selectors import EAGER_COHORT_PREVIEWS
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_confirm
from reviews.services.verdicts import round_finalise
from tests.fixtures import node_payload
from workspaces.models import Membership

HTMX = {"HTTP_HX_REQUEST": "true"}
CARD = re.compile(r'<article class="node [^"]*" id="node-(\d+)"')


def _seed(review_round, stream_factory, count: int) -> list[ReviewNode]:
    """`count` findings over two reviewers, the four priorities in turn, each on its own
    lines (so none overlap), with a confirmation on every fifth."""
    streams = [
        stream_factory(review_round, "implementation"),
        stream_factory(review_round, "quality"),
    ]
    nodes = []
    for i in range(count):
        payload = node_payload(
            title=f"Finding {i}",
            priority=f"P{i % 4}",
            confidence=0.5 + (i % 40) / 100,
            anchor={"path": f"pkg/m{i % 3}.py", "start_line": 10 * i + 1, "end_line": 10 * i + 2},
        )
        nodes.append(node_record(stream=streams[i % 2], payload=payload).node)
    for node in nodes[::5]:
        node_confirm(node=node, by_agent="quality" if node.stream.name != "quality" else "x")
    round_finalise(review_round=review_round)
    return nodes


def _reviewer(workspace):
    return Membership.objects.filter(workspace=workspace).select_related("user").first().user


def _group(html: str, key: str) -> str:
    """A group's markup on the page: from its heading (or summary) to its status line."""
    assert f'id="findings-{key}"' in html, f"no group {key} on the page"
    return html.split(f'id="findings-{key}"', 1)[1].split(f'id="findings-{key}-status"', 1)[0]


def _order(review_round, priority: str) -> list[int]:
    """A priority's canonical findings in the page's order."""
    return list(
        ReviewNode.objects.filter(round=review_round, priority=priority, duplicate_of=None)
        .order_by("-confidence", "id")
        .values_list("pk", flat=True)
    )


def _limit(total: int) -> int:
    return min(total, CARDS_PER_GROUP)


def _page_queries(client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries), response.content.decode()


def test_the_page_costs_the_same_queries_at_5_and_60_findings_and_bounds_each_group(
    review_factory, stream_factory, workspace_factory, client_for
):
    counts = []
    for size in (5, 60):
        ws = workspace_factory()
        review_round = review_factory(ws, tier="balanced")
        _seed(review_round, stream_factory, size)
        url = f"/w/{ws.slug}/reviews/{review_round.space_id}/"
        queries, html = _page_queries(client_for(_reviewer(ws)), url)
        counts.append(queries)
        # balanced: P0, P1 and P2 in the main list, P3 grouped below the threshold
        per_priority = {f"P{p}": len(range(p, size, 4)) for p in range(4)}
        for key in ("P0", "P1", "P2"):
            total = per_priority[key]
            group = _group(html, key)
            assert f"{total} finding{'s' if total != 1 else ''}</h3>" in group
            shown = [int(pk) for pk in CARD.findall(group)]
            assert shown == _order(review_round, key)[: _limit(total)]
        below = _group(html, "below")
        assert f"{per_priority['P3']} more below the balanced tier's threshold" in below
        assert len(CARD.findall(below)) == _limit(per_priority["P3"])
        assert f'Findings <span class="muted">({size})</span>' in html
    assert counts[0] == counts[1], counts
    # 15, 2 for the spend section (the review's ledger rows, the workspace's prices), 1 for
    # the threads (every message of the page's threads at once), 1 for the reviewers'
    # settings (whether each finding's reviewer can be asked) and 2 for the calibration of the
    # cards' confidence (the workspace's findings, its finished rounds).
    assert counts[1] <= 21, counts


def test_show_more_serves_the_next_cards_of_the_group_and_says_how_many_are_left(
    review_factory, stream_factory, workspace, alice, client_for
):
    review_round = review_factory(workspace, tier="balanced")
    _seed(review_round, stream_factory, 4 * (2 * CARDS_PER_GROUP + 3))  # 23 per priority
    client = client_for(alice)
    base = f"/w/{workspace.slug}/reviews/{review_round.space_id}/"
    html = client.get(base).content.decode()
    p1 = _group(html, "P1")
    more = f"{base}findings/?group=P1&amp;page=2"
    assert f'href="{more}"' in p1 and f'hx-get="{more}"' in p1
    assert f"Show {CARDS_PER_GROUP} more P1" in p1 and "(13 not shown yet)" in p1

    order = _order(review_round, "P1")
    second = client.get(f"{base}findings/?group=P1&page=2", **HTMX)
    assert second.status_code == 200
    fragment = second.content.decode()
    assert "<html" not in fragment
    assert [int(pk) for pk in CARD.findall(fragment)] == order[
        CARDS_PER_GROUP : 2 * CARDS_PER_GROUP
    ]
    assert "page=3" in fragment and "Show 3 more P1" in fragment
    assert f"Showing {2 * CARDS_PER_GROUP} of 23 P1 findings; 3 not shown yet." in fragment
    assert 'hx-swap-oob="innerHTML"' in fragment

    last = client.get(f"{base}findings/?group=P1&page=3", **HTMX).content.decode()
    assert [int(pk) for pk in CARD.findall(last)] == order[2 * CARDS_PER_GROUP :]
    assert "Show " not in last and "Showing 23 of 23 P1 findings." in last

    # Without JavaScript the link opens the page of findings on its own.
    page = client.get(f"{base}findings/?group=P1&page=2").content.decode()
    assert "<html" in page and "Back to the review" in page
    assert f"Findings {CARDS_PER_GROUP + 1}–{2 * CARDS_PER_GROUP} of 23" in page
    # The group below the threshold pages the same way.
    below = client.get(f"{base}findings/?group=below&page=2", **HTMX).content.decode()
    assert [int(pk) for pk in CARD.findall(below)] == _order(review_round, "P3")[
        CARDS_PER_GROUP : 2 * CARDS_PER_GROUP
    ]


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("group=P9&page=2", 400),
        ("group=P1&page=zero", 400),
        ("group=P1&page=0", 400),
        ("group=P1", 400),
        ("group=P1&page=99", 404),  # past the group's end
        ("group=P3&page=1", 404),  # balanced shows P3 below the threshold, not as a group
    ],
)
def test_a_malformed_page_is_a_400_and_one_out_of_range_a_404(
    query, status, review_factory, stream_factory, workspace, alice, client_for
):
    review_round = review_factory(workspace, tier="balanced")
    _seed(review_round, stream_factory, 8)
    response = client_for(alice).get(
        f"/w/{workspace.slug}/reviews/{review_round.space_id}/findings/?{query}", **HTMX
    )
    assert response.status_code == status


def test_the_more_endpoint_refuses_another_workspaces_review(
    review_factory, stream_factory, workspace, workspace_factory, charlie, client_for
):
    review_round = review_factory(workspace, tier="balanced")
    _seed(review_round, stream_factory, 30)
    other = workspace_factory("Other", owner=charlie)
    client = client_for(charlie)
    space = review_round.space_id
    # Not a member of the review's workspace, and through charlie's own workspace's address.
    for slug in (workspace.slug, other.slug):
        response = client.get(f"/w/{slug}/reviews/{space}/findings/?group=P0&page=2", **HTMX)
        assert response.status_code == 404, slug
        assert "Finding" not in response.content.decode()
    cohort = client.get(f"/w/{other.slug}/reviews/{space}/cohorts/abc/previews/", **HTMX)
    assert cohort.status_code == 404


def test_more_cards_follow_the_role_and_an_archived_repository(
    review_factory, stream_factory, workspace, member_factory, alice, client_for
):
    review_round = review_factory(workspace, tier="balanced")
    _seed(review_round, stream_factory, 4 * (CARDS_PER_GROUP + 2))
    url = f"/w/{workspace.slug}/reviews/{review_round.space_id}/findings/?group=P0&page=2"
    owner = client_for(alice).get(url, **HTMX).content.decode()
    assert 'name="action" value="dismiss"' in owner
    viewer = member_factory(workspace, "viewer")
    seen = client_for(viewer).get(url, **HTMX).content.decode()
    assert CARD.findall(seen) and 'name="action"' not in seen
    repository = review_round.space.pull_request.repository
    repository.archived_at = timezone.now()
    repository.save(update_fields=["archived_at"])
    archived = client_for(alice).get(url, **HTMX).content.decode()
    assert CARD.findall(archived) and 'name="action"' not in archived


def _cohort(i: int, path: str) -> dict:
    return {
        "key": f"{i:02d}" + "c" * 62,
        "label": f"cohort {i}",
        "paths": [path],
        "symbols": [],
        "context": [],
        "edges": [],
        "blast_radius": None,
        "reading_order": [{"path": path, "symbols": [], "is_test": False}],
        "diagram": "",
        "previews": [
            {
                "path": path,
                "hunks": [
                    {
                        "index": 0,
                        "old_start": 1,
                        "old_count": 1,
                        "new_start": 1,
                        "new_count": 2,
                        "section": "",
                        "text": "@@ -1,1 +1,2 @@\n import os\n+value = os.environ['X']\n",
                    }
                ],
            }
        ],
    }


def test_later_cohorts_load_their_previews_when_opened(
    review_factory, stream_factory, workspace, alice, client_for
):
    review_round = review_factory(workspace, tier="balanced")
    stream = stream_factory(review_round, "implementation")
    finding = node_record(
        stream=stream,
        payload=node_payload(
            title="Reads the environment", anchor={"path": "f4.py", "start_line": 2, "end_line": 2}
        ),
    ).node
    cohorts = [_cohort(i, f"f{i}.py") for i in range(1, EAGER_COHORT_PREVIEWS + 3)]
    review_round.stats = RoundStats.model_validate({"cohorts": cohorts})
    review_round.save(update_fields=["stats"])
    client = client_for(alice)
    base = f"/w/{workspace.slug}/reviews/{review_round.space_id}/"
    html = client.get(base).content.decode()
    for i, cohort in enumerate(cohorts, start=1):
        article = re.search(
            rf'<article class="cohort[^"]*" id="cohort-{cohort["key"][:12]}".*?</article>',
            html,
            re.S,
        ).group(0)
        previews = f"{base}cohorts/{cohort['key']}/previews/"
        if i <= EAGER_COHORT_PREVIEWS:
            assert "Changes in f" in article and '<table class="diff">' in article
            assert previews not in article
        else:
            assert "<table" not in article
            assert f'hx-get="{previews}"' in article and 'hx-trigger="toggle once"' in article
            assert f'<a href="{previews}">Show the changes</a>' in article

    fourth = cohorts[3]
    fragment = client.get(f"{base}cohorts/{fourth['key']}/previews/", **HTMX).content.decode()
    assert "<html" not in fragment and "Changes in f4.py" in fragment
    # The finding on a previewed line already has its card in the page's list (each finding
    # has one card): the diff opened later links to it.
    assert f'id="node-{finding.pk}"' in html and f"diff-node-{finding.pk}" not in html
    assert f"diff-node-{finding.pk}" not in fragment
    assert f'<a href="#node-{finding.pk}">Reads the environment</a>' in fragment
    assert client.get(f"{base}cohorts/{'z' * 64}/previews/", **HTMX).status_code == 404
    page = client.get(f"{base}cohorts/{fourth['key']}/previews/").content.decode()
    assert "<html" in page and "Back to the review" in page and "Changes in f4.py" in page
    # On the cohort's own page (no list there) the card is in the diff.
    assert f'id="diff-node-{finding.pk}"' in page


def test_the_live_sections_render_from_the_same_bounded_context(
    review_factory, stream_factory, workspace, alice, client_for
):
    """The socket renders the sections with `review_context`, like the page: the findings it
    sends are the same bounded groups the page shows on reload."""
    from django.template.loader import render_to_string

    from reviews.web.presenters import review_context

    review_round = review_factory(workspace, tier="balanced")
    _seed(review_round, stream_factory, 4 * (CARDS_PER_GROUP + 1))
    html = client_for(alice).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    membership = Membership.objects.get(workspace=workspace, user=alice)
    live = render_to_string(
        "reviews/sections/findings.html",
        {**review_context(membership, review_round.space), "csrf_token": "t"},
    )
    page_cards = CARD.findall(html.content.decode().split('id="review-findings"')[1])
    assert CARD.findall(live) == page_cards
    assert len(page_cards) == 4 * CARDS_PER_GROUP
