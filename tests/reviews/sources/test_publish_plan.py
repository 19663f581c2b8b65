"""The publish plan: what goes inline, what is folded, what is skipped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.sources.diffs import CommentableLines, parse_unified_diff
from reviews.sources.publish_plan import (
    FOOTER,
    FoldReason,
    NodeRecord,
    SkipReason,
    build_publish_plan,
    fold_everything,
    review_event,
)

# app.py: hunk 0 covers new lines 1-5 (line 3 added), hunk 1 covers new lines 20-24.
DIFF = "\n".join(
    [
        "diff --git a/app.py b/app.py",
        "index 1111111..2222222 100644",
        "--- a/app.py",
        "+++ b/app.py",
        "@@ -1,4 +1,5 @@",
        " import os",
        " import sys",
        "+import json",
        " ",  # an empty context line is a single space
        " def main():",
        "@@ -19,5 +20,5 @@ def main():",
        "     a = 1",
        "     b = 2",
        "-    c = 3",
        "+    c = 4",
        "     d = 5",
        "     e = 6",
        "",
    ]
)
COMMENTABLE = CommentableLines.from_files(parse_unified_diff(DIFF))


def node(id, **fields):
    fields.setdefault("status", "open")
    fields.setdefault("title", f"Finding {id}")
    fields.setdefault("body", "Explain the problem.")
    fields.setdefault("priority", "P2")
    fields.setdefault("type", "bug")
    return NodeRecord(id=id, **fields)


def plan(nodes, *, verdict="Hold", selection="all_open", approve_on_ship=False):
    return build_publish_plan(
        nodes=nodes,
        verdict=verdict,
        selection=selection,
        approve_on_ship=approve_on_ship,
        commentable=COMMENTABLE,
    )


def test_it_puts_an_anchor_inside_the_diff_inline():
    """A single added line and a range inside one hunk become inline comments."""
    result = plan(
        [
            node(1, path="app.py", start_line=3, end_line=3),
            node(2, path="app.py", start_line=21, end_line=23, reviewers=["ana", "ben"]),
        ]
    )
    assert result.inline_ids == [1, 2]
    single, multi = result.api_comments()
    assert single == {"path": "app.py", "line": 3, "side": "RIGHT", "body": single["body"]}
    assert multi["start_line"] == 21 and multi["line"] == 23 and multi["start_side"] == "RIGHT"
    assert single["body"].endswith(FOOTER) and multi["body"].endswith(FOOTER)
    assert "ana, ben" in multi["body"]


def test_it_accepts_left_side_anchors_on_deleted_and_context_lines():
    """LEFT lines are the old file's: line 21 (c = 3) was deleted there."""
    result = plan([node(1, path="app.py", start_line=21, end_line=21, side="LEFT")])
    assert result.api_comments()[0]["side"] == "LEFT"


@pytest.mark.parametrize(
    ("start", "end", "side"),
    [
        (10, 10, "RIGHT"),  # between hunks
        (4, 21, "RIGHT"),  # spans two hunks
        (24, 25, "RIGHT"),  # runs past the end of a hunk
        (5, 5, "LEFT"),  # old line 5 is not in any hunk
        (3, 2, "RIGHT"),  # backwards range
        (3, 3, "MIDDLE"),  # not a side
    ],
)
def test_it_folds_anchors_no_longer_in_the_diff_with_their_location(start, end, side):
    """Anything GitHub would reject is folded into the body, naming path:line."""
    result = plan([node(7, path="app.py", start_line=start, end_line=end, side=side)])
    assert result.comments == ()
    assert [(f.node_id, f.reason) for f in result.folded] == [(7, FoldReason.NOT_IN_DIFF)]
    assert f"`app.py:{start}" in result.body
    assert result.body.count(FOOTER) == 2  # the item's and the review's


def test_it_folds_a_range_whose_lines_sit_in_different_hunks():
    """Every line commentable is not enough: start and end must share one hunk."""
    adjacent = CommentableLines({("x.py", "RIGHT", 1): 0, ("x.py", "RIGHT", 2): 1})
    result = build_publish_plan(
        nodes=[node(1, path="x.py", start_line=1, end_line=2)],
        verdict="Hold",
        selection="all_open",
        approve_on_ship=False,
        commentable=adjacent,
    )
    assert result.folded_ids == [1]
    assert adjacent.same_hunk("x.py", 1, 1, "RIGHT") == 0


def test_it_folds_a_file_not_in_the_diff():
    """A path the PR does not touch cannot be commented inline."""
    result = plan([node(1, path="other.py", start_line=1, end_line=1)])
    assert result.folded[0].reason is FoldReason.NOT_IN_DIFF


def test_it_folds_unanchored_nodes_into_the_body():
    """A node without a path or line goes to the body, with its text and footer."""
    result = plan([node(1, title="Missing tests", body="No test covers this.")])
    assert [(f.node_id, f.reason) for f in result.folded] == [(1, FoldReason.UNANCHORED)]
    assert "Missing tests" in result.body and "No test covers this." in result.body
    assert result.folded[0].text.endswith(FOOTER)


def test_it_offers_a_suggestion_only_on_an_exact_right_side_range():
    """replacement_lines → ```suggestion when inline on RIGHT; folded nodes show plain code."""
    exact = node(1, path="app.py", start_line=3, end_line=3, replacement_lines=["import json  # x"])
    left = node(2, path="app.py", start_line=21, end_line=21, side="LEFT", replacement_lines=["z"])
    none = node(3, path="app.py", start_line=22, end_line=22)
    folded = node(4, path="app.py", start_line=10, end_line=10, replacement_lines=["q = 1"])
    result = plan([exact, left, none, folded])
    bodies = {c.node_id: c.body for c in result.comments}
    assert "```suggestion\nimport json  # x\n```" in bodies[1]
    assert "suggestion" not in bodies[2]
    assert "suggestion" not in bodies[3]
    assert "```suggestion" not in result.body
    assert "```\nq = 1\n```" in result.body


def test_it_makes_the_suggestion_fence_longer_than_any_backtick_run():
    """A replacement containing ``` gets a four-backtick fence."""
    result = plan(
        [node(1, path="app.py", start_line=3, end_line=3, replacement_lines=['s = "```"'])]
    )
    assert '````suggestion\ns = "```"\n````' in result.comments[0].body


def test_it_allows_an_empty_suggestion_to_delete_lines():
    """An empty replacement is an empty suggestion block (a deletion)."""
    result = plan([node(1, path="app.py", start_line=3, end_line=3, replacement_lines=[])])
    assert "```suggestion\n```" in result.comments[0].body


def test_it_skips_resolved_and_dismissed_nodes():
    """Resolved and dismissed nodes are neither inline nor in the body."""
    result = plan(
        [
            node(1, status="resolved", title="Gone A"),
            node(2, status="dismissed", title="Gone B"),
            node(3, path="app.py", start_line=3, end_line=3),
        ]
    )
    assert [(s.node_id, s.reason) for s in result.skipped] == [
        (1, SkipReason.RESOLVED),
        (2, SkipReason.DISMISSED),
    ]
    assert "Gone A" not in result.body and "Gone B" not in result.body
    assert result.inline_ids == [3]


def test_it_keeps_only_peer_confirmed_nodes_for_consensus():
    """consensus keeps consensus_ready or peer-confirmed nodes; a self-confirmation is none."""
    nodes = [
        node(1, status="consensus_ready"),
        node(2, confirmed_by_peer=True),
        node(3),
        node(4, status="consensus_ready", author="ana", confirmed_by=["ana"]),
        node(5, author="ana", confirmed_by=["ana", "ben"]),
    ]
    result = plan(nodes, selection="consensus")
    assert sorted(result.folded_ids) == [1, 2, 5]
    assert sorted(result.skipped_ids) == [3, 4]
    assert {s.reason for s in result.skipped} == {SkipReason.UNCONFIRMED}
    assert sorted(plan(nodes, selection="all_open").folded_ids) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("verdict", "approve_on_ship", "event"),
    [
        ("Block", False, "REQUEST_CHANGES"),
        ("Block", True, "REQUEST_CHANGES"),
        ("Hold", False, "COMMENT"),
        ("Hold", True, "COMMENT"),
        ("Ship", True, "APPROVE"),
        ("Ship", False, "COMMENT"),
    ],
)
def test_it_maps_the_verdict_to_a_review_event(verdict, approve_on_ship, event):
    """Block → REQUEST_CHANGES, Hold → COMMENT, Ship → APPROVE only with approve_on_ship."""
    assert review_event(verdict, approve_on_ship=approve_on_ship) == event
    result = plan([], verdict=verdict, approve_on_ship=approve_on_ship)
    assert result.event == event
    assert result.body.strip(), "REQUEST_CHANGES and COMMENT need a body"


def test_it_rejects_unknown_verdicts_and_selections():
    """A typo must not silently pick an event or a selection."""
    with pytest.raises(ValueError):
        review_event("Approve", approve_on_ship=True)
    with pytest.raises(ValueError):
        plan([], selection="everything")


def test_it_folds_everything_for_the_fallback():
    """fold_everything: no inline comments, every node in the body once, same event."""
    original = plan(
        [
            node(1, path="app.py", start_line=3, end_line=3, priority="P1", title="Inline one"),
            node(2, title="Already folded", priority="P0"),
            node(3, status="dismissed"),
        ],
        verdict="Block",
    )
    fallback = fold_everything(original)
    assert fallback.comments == ()
    assert fallback.event == "REQUEST_CHANGES"
    assert [f.node_id for f in fallback.folded] == [2, 1]  # priority order kept
    assert fallback.folded[1].reason is FoldReason.REJECTED
    assert fallback.body.count("Inline one") == 1 and "`app.py:3`" in fallback.body
    assert fallback.skipped == original.skipped


def test_it_closes_an_unbalanced_fence_in_a_body():
    """An unclosed ``` in one finding must not swallow the rest of the review body."""
    result = plan([node(1, body="see:\n```py\nx = 1"), node(2, title="Second")])
    before_second = result.body.split("Second")[0]
    assert before_second.count("```") % 2 == 0


anchors = st.builds(
    lambda path, start, length, side: (path, start, start + length, side),
    st.sampled_from(["app.py", "other.py", None]),
    st.integers(1, 30),
    st.integers(0, 4),
    st.sampled_from(["LEFT", "RIGHT"]),
)


@given(
    st.lists(
        st.tuples(
            anchors,
            st.sampled_from(["open", "consensus_ready", "resolved", "dismissed"]),
            st.booleans(),
        ),
        max_size=12,
    ),
    st.sampled_from(["all_open", "consensus"]),
)
def test_it_places_every_node_exactly_once_and_only_valid_anchors_inline(specs, selection):
    """Property: inline ∪ folded ∪ skipped is every node, disjointly; every inline comment's
    lines are all commentable and in one hunk; the fallback loses nothing."""
    nodes = [
        node(i, path=p, start_line=s, end_line=e, side=side, status=status, confirmed_by_peer=c)
        for i, ((p, s, e, side), status, c) in enumerate(specs)
    ]
    result = plan(nodes, selection=selection)
    placed = result.inline_ids + result.folded_ids + result.skipped_ids
    assert sorted(placed) == list(range(len(nodes)))
    for comment in result.comments:
        start = comment.start_line or comment.line
        hunks = {
            COMMENTABLE.hunk_of(comment.path, ln, comment.side)
            for ln in range(start, comment.line + 1)
        }
        assert len(hunks) == 1 and None not in hunks
    fallback = fold_everything(result)
    assert sorted(fallback.folded_ids) == sorted(result.inline_ids + result.folded_ids)
