"""The posted review says what decided the verdict, and keeps saying it after a 422 fallback."""

from __future__ import annotations

from reviews.sources.publish_plan import build_publish_plan, fold_everything, plan_digest
from tests.reviews.sources.test_publish_plan import COMMENTABLE, node

RULE = "P0 at 0.90: SQL built from user input (app.py:3)"


def _plan(rule: str = RULE):
    return build_publish_plan(
        nodes=[node(1, path="app.py", start_line=3, end_line=3, priority="P0")],
        verdict="Block",
        selection="all_open",
        approve_on_ship=False,
        commentable=COMMENTABLE,
        rule=rule,
    )


def test_the_body_names_the_rule_and_the_fallback_keeps_it():
    result = _plan()
    assert result.body.startswith(f"## Quorum review: Block\n\n**Why Block:** {RULE}\n")
    folded = fold_everything(result)
    assert f"**Why Block:** {RULE}" in folded.body and folded.comments == ()


def test_the_rule_is_part_of_what_an_approval_binds():
    """Another reason for the same level is another review: the digest changes."""
    assert plan_digest(_plan()) != plan_digest(_plan("P0 at 0.95: something else (app.py:3)"))


def test_without_a_rule_the_body_is_as_before():
    assert _plan("").body.startswith("## Quorum review: Block\n\n1 finding: 1 inline")
