"""The diff as a working surface: findings inline in the cohort previews with their actions,
the file tree with per-person viewed marks, and both copies of a finding kept in step."""

from __future__ import annotations

import asyncio
import re

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from reviews.domain.file_tree import file_view_key
from reviews.index.cohort_types import cohorts_to_json
from reviews.index.cohorts import compute_cohorts
from reviews.models import FileViewed, ReviewNode, ReviewRound
from reviews.selectors.changed_files import file_summaries
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from reviews.sources.diffs import parse_unified_diff
from tests.fixtures import node_payload

HTMX = {"HTTP_HX_REQUEST": "true"}

CART = "\n".join(
    [
        "diff --git a/shop/cart.py b/shop/cart.py",
        "index 1111111..2222222 100644",
        "--- a/shop/cart.py",
        "+++ b/shop/cart.py",
        "@@ -1,4 +1,5 @@ def total(items):",
        " def total(items):",
        "-    return sum(items)",
        "+    tax = 0.2",
        "+    return sum(items) * tax",
        " ",
        " ",
        "",
    ]
)
README = """diff --git a/docs/README.md b/docs/README.md
index 3333333..4444444 100644
--- a/docs/README.md
+++ b/docs/README.md
@@ -1,2 +1,2 @@
 # Shop
-Old words
+New words
"""


def _prepare(review_round: ReviewRound, diff: str, *, store_files: bool = True) -> None:
    """What the prepare stage stores: the diff, the changed files and the cohorts with their
    previews. `store_files=False`: a round prepared before the files were stored."""
    review_round.diff = diff
    files = parse_unified_diff(diff)
    cohorts = cohorts_to_json(compute_cohorts(files, None))
    extra = {"files": file_summaries(files)} if store_files else {}
    review_round.stats = review_round.stats.with_(cohorts=cohorts, **extra)
    review_round.save(update_fields=["diff", "stats"])


@pytest.fixture
def surface(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace)
    _prepare(review_round, CART + README, store_files=False)
    stream = stream_factory(review_round, "implementation")
    inline = node_record(
        stream=stream,
        payload=node_payload(
            title="Tax applied as a total",
            priority="P1",
            anchor={"path": "shop/cart.py", "start_line": 4, "end_line": 4},
        ),
    ).node
    elsewhere = node_record(
        stream=stream,
        payload=node_payload(
            title="Whole module untested",
            priority="P2",
            anchor={"path": "shop/cart.py", "start_line": 90, "end_line": 90},
        ),
    ).node
    return review_round, inline, elsewhere


def _page(client, workspace, space_id) -> str:
    response = client.get(f"/w/{workspace.slug}/reviews/{space_id}/")
    assert response.status_code == 200
    return response.content.decode()


def _ids(html: str) -> list[str]:
    return re.findall(r'\sid="([^"]+)"', html)


def test_a_finding_has_one_card_in_the_diff_at_its_line_and_a_line_in_the_index(
    surface, workspace, alice, client_for
):
    review_round, inline, elsewhere = surface
    html = _page(client_for(alice), workspace, review_round.space_id)
    cohorts = html.split('id="review-cohorts"')[1].split('id="review-findings"')[0]
    findings = html.split('id="review-findings"')[1]
    # The card sits in the diff, with its own ids and its buttons.
    assert f'id="diff-node-{inline.pk}"' in cohorts
    assert (
        f'for="diff-reason-{inline.pk}"' in cohorts and f'id="diff-reason-{inline.pk}"' in cohorts
    )
    assert f'hx-target="#diff-node-{inline.pk}"' in cohorts
    card = cohorts.split(f'id="diff-node-{inline.pk}"')[1].split("</article>")[0]
    assert ">Dismiss</button>" in card and ">Resolve</button>" in card
    # Right under line 4 of shop/cart.py.
    row_4 = cohorts.index('<td class="ln">4</td>')
    assert row_4 < cohorts.index(f'id="diff-node-{inline.pk}"')
    # Each finding once: the list holds a line leading to the diff's card, no second card.
    assert f'id="node-{inline.pk}"' not in html
    line = findings.split(f'id="index-node-{inline.pk}"')[1].split("</li>")[0]
    assert f'href="#diff-node-{inline.pk}"' in line and "Tax applied as a total" in line
    # A finding on a line no preview shows has its card in the list, and its line leads there.
    assert f"diff-node-{elsewhere.pk}" not in html
    assert f'id="node-{elsewhere.pk}"' in findings
    assert f'href="#node-{elsewhere.pk}"' in findings
    assert html.count('<article class="node ') == 2
    ids = _ids(html)
    assert sorted(i for i in set(ids) if ids.count(i) > 1) == []


@pytest.mark.parametrize("where", ["diff", "list"])
def test_an_action_updates_the_one_card_and_its_index_line(
    surface, workspace, member_factory, client_for, where
):
    review_round, inline, elsewhere = surface
    reviewer = member_factory(workspace, "reviewer")
    node = inline if where == "diff" else elsewhere
    target = f"diff-node-{node.pk}" if where == "diff" else f"node-{node.pk}"
    response = client_for(reviewer).post(
        f"/w/{workspace.slug}/reviews/{review_round.space_id}/nodes/{node.pk}/",
        {"action": "dismiss", "reason": "tax is a rate here"},
        HTTP_HX_TARGET=target,
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert ReviewNode.objects.get(pk=node.pk).status == "dismissed"
    cards = re.findall(r"<article[^>]*>", html)
    assert len(cards) == 1
    assert f'id="{target}"' in cards[0] and "hx-swap-oob" not in cards[0]
    assert "node-dismissed" in cards[0]
    line = re.search(rf'<li id="index-node-{node.pk}"[^>]*>', html)
    assert line and 'hx-swap-oob="true"' in line.group(0)
    assert 'data-status="dismissed"' in line.group(0)


@pytest.mark.django_db(transaction=True)
def test_the_live_update_of_a_finding_carries_its_card_and_index_line(surface, alice):
    from tests.reviews.test_review_socket import ORIGIN, _communicator, _cookie

    review_round, inline, _ = surface
    cookie = _cookie(alice)

    async def scenario():
        comm = _communicator(review_round.space_id, ORIGIN, cookie)
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=5)  # the whole page at connect
        await database_sync_to_async(node_dismiss)(node=inline, user=alice, reason="dup")
        update = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return update

    update = asyncio.run(scenario())
    tag = re.search(rf'<article[^>]*id="diff-node-{inline.pk}"[^>]*>', update)
    assert tag and 'hx-swap-oob="true"' in tag.group(0) and "node-dismissed" in tag.group(0)
    assert f'id="node-{inline.pk}"' not in update  # no second card
    line = re.search(rf'<li id="index-node-{inline.pk}"[^>]*>', update)
    assert line and 'hx-swap-oob="true"' in line.group(0) and "dismissed" in line.group(0)


def test_a_reply_shows_in_the_findings_one_card(surface, workspace, member_factory, client_for):
    review_round, inline, _ = surface
    reviewer = member_factory(workspace, "reviewer")
    target = f"diff-thread-node-{inline.pk}"
    response = client_for(reviewer).post(
        f"/w/{workspace.slug}/reviews/{review_round.space_id}/threads/node:{inline.pk}/",
        {"body": "Tax is a rate here"},
        HTTP_HX_TARGET=target,
        **HTMX,
    )
    assert response.status_code == 200
    threads = re.findall(r'<div class="thread"[^>]*>', response.content.decode())
    assert len(threads) == 1
    assert f'id="{target}"' in threads[0] and "hx-swap-oob" not in threads[0]
    assert response.content.decode().count("<p>Tax is a rate here</p>") == 1


@pytest.mark.django_db(transaction=True)
def test_the_live_update_of_a_reply_carries_the_card(surface, alice):
    from reviews.services import threads
    from tests.reviews.test_review_socket import ORIGIN, _communicator, _cookie

    review_round, inline, _ = surface
    cookie = _cookie(alice)

    def reply() -> None:
        thread = threads.thread_get(space=review_round.space, key=f"node:{inline.pk}")
        threads.message_post(thread=thread, user=alice, body="Tax is a rate here")

    async def scenario():
        comm = _communicator(review_round.space_id, ORIGIN, cookie)
        assert (await comm.connect())[0]
        await comm.receive_from(timeout=5)  # the whole page at connect
        await database_sync_to_async(reply)()
        update = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return update

    update = asyncio.run(scenario())
    assert 'id="review-cohorts"' not in update and 'id="review-findings"' not in update
    card = update.split(f'id="diff-node-{inline.pk}"', 1)[1].split("</article>", 1)[0]
    assert f'id="diff-thread-node-{inline.pk}"' in card and "Tax is a rate here" in card


def test_the_file_tree_lists_every_file_with_counts_and_links(
    surface, workspace, alice, client_for
):
    review_round, _, _ = surface
    html = _page(client_for(alice), workspace, review_round.space_id)
    tree = html.split('id="review-files"')[1].split("</section>")[0]
    assert "(0 of 2 files viewed)" in tree
    assert "<code>docs/</code>" in tree and "<code>shop/</code>" in tree
    cart = tree.split("<code>cart.py</code>")[1].split("</li>")[0]
    assert "+2" in cart and "−1" in cart and "2 findings" in cart
    link = re.search(r'href="#(file-[0-9a-f-]+)"><code>cart.py', tree)
    assert link is not None
    assert f'id="{link.group(1)}"' in html  # the preview it links to


def _mark(client, workspace, review_round, path, viewed=True, **extra):
    data = {"path": path, "round": review_round.number}
    if viewed:
        data["viewed"] = "1"
    return client.post(
        f"/w/{workspace.slug}/reviews/{review_round.space_id}/files/viewed/", data, **extra
    )


def test_a_member_marks_files_viewed_for_themselves(
    surface, workspace, member_factory, client_for, alice
):
    review_round, _, _ = surface
    viewer = member_factory(workspace, "viewer")
    client = client_for(viewer)
    response = _mark(client, workspace, review_round, "shop/cart.py", **HTMX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="review-files"')
    assert "(1 of 2 files viewed)" in fragment
    # Only for this person.
    assert "(0 of 2 files viewed)" in _page(client_for(alice), workspace, review_round.space_id)
    # Unchecking removes it; without JavaScript the form redirects back to the tree.
    client = client_for(viewer)  # the test client is one browser: log the viewer back in
    response = _mark(client, workspace, review_round, "shop/cart.py", viewed=False)
    assert response.status_code == 302 and response["Location"].endswith("#review-files"), response
    assert not FileViewed.objects.exists()


def test_a_mark_survives_a_round_where_the_file_did_not_change_and_resets_where_it_did(
    surface, workspace, alice, client_for
):
    review_round, _, _ = surface
    client = client_for(alice)
    _mark(client, workspace, review_round, "shop/cart.py")
    _mark(client, workspace, review_round, "docs/README.md")
    # Round 2 (its files stored by prepare, where round 1 had only its diff): README edited
    # again, cart.py's change the same but further down (a rebase).
    from reviews.services.rounds import round_start

    second = round_start(space=review_round.space, head_sha="c" * 40, tier="thorough")
    moved = CART.replace("@@ -1,4 +1,5 @@", "@@ -11,4 +11,5 @@")
    _prepare(second, moved + README.replace("New words", "Newer words"))
    html = _page(client, workspace, review_round.space_id)
    tree = html.split('id="review-files"')[1].split("</section>")[0]
    assert "(1 of 2 files viewed)" in tree
    cart = tree.split('id="viewed-')[1:]
    checked = [c.split(">")[0] for c in cart]
    assert sum("checked" in c for c in checked) == 1
    assert FileViewed.objects.filter(
        file_key=file_view_key("shop/cart.py", [h.text for h in parse_unified_diff(moved)[0].hunks])
    ).exists()


def test_another_workspace_gets_404_and_an_unknown_file_is_refused(
    surface, workspace, charlie, client_for, alice
):
    review_round, _, _ = surface
    assert _mark(client_for(charlie), workspace, review_round, "shop/cart.py").status_code == 404
    response = _mark(client_for(alice), workspace, review_round, "not/changed.py", **HTMX)
    assert response.status_code == 404
    assert not FileViewed.objects.exists()


def test_an_archived_repository_refuses_marks(surface, workspace, alice, client_for):
    review_round, _, _ = surface
    repository = review_round.space.pull_request.repository
    repository.archived_at = timezone.now()
    repository.save(update_fields=["archived_at"])
    client = client_for(alice)
    response = _mark(client, workspace, review_round, "shop/cart.py", **HTMX)
    assert response.status_code == 409
    assert "archived" in response.content.decode()
    assert not FileViewed.objects.exists()
    tree = _page(client, workspace, review_round.space_id).split('id="review-files"')[1]
    assert re.search(r'id="viewed-[0-9a-f]+" disabled', tree)


def test_the_service_refuses_an_archived_review_too(surface, alice):
    from reviews.services.viewed import file_viewed_mark
    from workspaces.rules import ReadOnlyError

    review_round, _, _ = surface
    repository = review_round.space.pull_request.repository
    repository.archived_at = timezone.now()
    repository.save(update_fields=["archived_at"])
    with pytest.raises(ReadOnlyError):
        file_viewed_mark(
            space=review_round.space,
            review_round=review_round,
            user=alice,
            path="shop/cart.py",
            viewed=True,
        )
