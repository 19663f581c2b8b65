"""Which finding a pull request comment written on GitHub is about."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.github_replies import (
    MIN_QUOTE,
    Posted,
    asks_quorum,
    finding_of,
    linked_comments,
    quotes,
)
from workspaces.rules import RuleError, clean_github_handle

DIVISION = Posted(1, 501, "**P0 · Division by zero**\n\nDividing by zero raises on import.")
EVAL = Posted(2, 502, "**P1 · eval on user input**\n\neval runs whatever the user typed.")
POSTED = [DIVISION, EVAL]


def test_a_quote_names_the_finding_it_comes_from():
    body = "> eval runs whatever\n> the user typed.\n\nOnly admins reach it."
    assert quotes(body) == ["eval runs whatever the user typed."]
    assert finding_of(body, POSTED) == 2


def test_a_link_to_a_comment_names_its_finding_first():
    body = "See https://github.com/acme/app/pull/7#discussion_r501\n> eval runs whatever"
    assert linked_comments(body) == [501]
    assert finding_of(body, POSTED) == 1


def test_what_names_nothing_or_everything_names_no_finding():
    assert finding_of("LGTM, ship it.", POSTED) is None
    assert finding_of("> Dividing", POSTED) is None  # too short to say which
    assert finding_of("> raises on import. Or not.", POSTED) is None  # not their text
    shared = [Posted(1, 1, "the same careful words here"), Posted(2, 2, "the same careful words")]
    assert finding_of("> the same careful words", shared) is None
    assert finding_of("> the same careful words here", shared) == 1
    assert finding_of("#discussion_r999 elsewhere", POSTED) is None


@given(
    bodies=st.lists(
        st.text(alphabet=st.characters(codec="ascii", categories=["L", "N"]), min_size=30),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    which=st.integers(min_value=0, max_value=3),
    start=st.integers(min_value=0, max_value=10),
)
def test_quoting_a_long_enough_passage_of_one_comment_names_that_comment(bodies, which, start):
    posted = [Posted(i + 10, i + 500, body) for i, body in enumerate(bodies)]
    chosen = posted[which % len(posted)]
    passage = chosen.body[start : start + MIN_QUOTE + 5]
    found = finding_of(f"> {passage}\n\nreply", posted)
    others = [p.node_id for p in posted if passage.casefold() in p.body.casefold()]
    # The quoted comment, unless another says exactly the same: then none.
    assert found == (chosen.node_id if others == [chosen.node_id] else None)


def test_the_handle_is_spelt_like_a_github_login():
    assert clean_github_handle("@Quorum") == "quorum"
    assert clean_github_handle("review-bot2") == "review-bot2"
    for bad in ("", "-bot", "bot-", "a--b", "a_b", "x" * 40, "two words"):
        try:
            clean_github_handle(bad)
        except RuleError:
            continue
        raise AssertionError(f"{bad!r} was taken as a handle")


def test_a_question_is_a_mention_in_the_comments_own_words():
    assert asks_quorum("@quorum why P0?", "quorum")
    assert asks_quorum("Thanks.\n\n@Quorum, and the fix?", "quorum")
    assert not asks_quorum("> @quorum why P0?\n\nI wondered too.", "quorum")
    assert not asks_quorum("`@quorum` is the bot's name", "quorum")
    assert not asks_quorum("@quorum why?", "reviewbot")
