"""Which decisions become proposed few-shots, and what a proposal says: at most K per reviewer,
eligible ones only, spread over rules and files, with a reason and recent first, bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.few_shots import (
    BAD,
    EXCERPT_MAX_CHARS,
    GOOD,
    PER_REVIEWER,
    TRANSITIONS,
    VERDICT_MAX_CHARS,
    Covered,
    Decided,
    Outcome,
    ProposalStatus,
    eligible,
    excerpt_text,
    propose_few_shots,
    select_decisions,
    shot_text,
    transition_allowed,
)
from workspaces.rules import FewShot

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REVIEWERS = ("implementation", "security", "payments")
RULES = ("security", "correctness", "maintainability", "E501", "B602")
PATHS = ("app/views.py", "app/models.py", "shop/search.py", "README.md")


@st.composite
def decisions(draw, *, reviewers=REVIEWERS, rules=RULES, paths=PATHS):
    node_id = draw(st.integers(min_value=1, max_value=60))
    return Decided(
        node_id=node_id,
        reviewer=draw(st.sampled_from(reviewers)),
        outcome=draw(st.sampled_from(list(Outcome))),
        at=T0 + timedelta(minutes=draw(st.integers(min_value=0, max_value=10_000))),
        reason=draw(st.sampled_from(["", "  ", "we validate this upstream", "fixed in #12"])),
        rule=draw(st.sampled_from(rules)),
        path=draw(st.sampled_from(paths)),
        excerpt=draw(st.sampled_from(["", "app.py\n   10  x = 1", "a.py\n    3  call()"])),
        said=draw(st.sampled_from(["SQL built from input. Use parameters.", "", "Naming."])),
        verdict="P1 bug (security)",
    )


many = st.lists(decisions(), max_size=40)
slots = st.integers(min_value=0, max_value=8)


def _unique(decided):
    """One decision per (reviewer, finding): the service reads each finding once."""
    seen = {}
    for d in decided:
        seen.setdefault((d.reviewer, d.node_id), d)
    return list(seen.values())


@given(many, slots)
def test_at_most_k_per_reviewer_eligible_ones_only_each_finding_once(decided, k):
    chosen = select_decisions(decided, slots=k)
    for reviewer, picked in chosen.items():
        assert 0 < len(picked) <= k
        assert all(d.reviewer == reviewer and eligible(d) for d in picked)
        assert len({d.node_id for d in picked}) == len(picked)
        assert all(d in decided for d in picked)


@given(many, slots)
def test_every_slot_is_filled_while_eligible_decisions_remain(decided, k):
    decided = _unique(decided)
    chosen = select_decisions(decided, slots=k)
    for reviewer in REVIEWERS:
        available = [d for d in decided if d.reviewer == reviewer and eligible(d)]
        assert len(chosen.get(reviewer, ())) == min(k, len(available))


@given(many, slots, st.randoms(use_true_random=False))
def test_the_choice_does_not_depend_on_the_order_decisions_come_in(decided, k, random):
    decided = _unique(decided)
    shuffled = list(decided)
    random.shuffle(shuffled)
    assert select_decisions(decided, slots=k) == select_decisions(shuffled, slots=k)


@given(many, slots, st.frozensets(st.sampled_from(RULES)))
def test_picks_spread_over_rules_not_yet_covered(decided, k, covered_rules):
    """As many rules not yet covered as there are slots for: one finding per rule first."""
    decided = _unique(decided)
    covered = {r: Covered(rules=covered_rules) for r in REVIEWERS}
    chosen = select_decisions(decided, slots=k, covered=covered)
    for reviewer in REVIEWERS:
        new_rules = {
            d.rule
            for d in decided
            if d.reviewer == reviewer and eligible(d) and d.rule not in covered_rules
        }
        picked = chosen.get(reviewer, ())
        picked_new = {d.rule for d in picked if d.rule not in covered_rules}
        assert len(picked_new) == min(k, len(new_rules))


@given(st.lists(decisions(rules=("security",), paths=("app/views.py",)), max_size=30), slots)
def test_on_one_rule_and_one_file_it_takes_those_with_a_reason_then_the_most_recent(decided, k):
    decided = _unique(decided)
    chosen = select_decisions(decided, slots=k)
    for reviewer, picked in chosen.items():
        ranked = sorted(
            (d for d in decided if d.reviewer == reviewer and eligible(d)),
            key=lambda d: (d.has_reason, d.at, d.node_id),
            reverse=True,
        )
        assert list(picked) == ranked[:k]


def test_a_dismissal_without_a_reason_teaches_nothing_and_code_is_needed():
    base = dict(
        node_id=1,
        reviewer="quality",
        at=T0,
        rule="maintainability",
        path="a.py",
        excerpt="a.py\n    1  x",
        said="Rename x.",
    )
    assert not eligible(Decided(outcome=Outcome.DISMISSED, reason=" ", **base))
    assert eligible(Decided(outcome=Outcome.DISMISSED, reason="x is the domain's word", **base))
    assert eligible(Decided(outcome=Outcome.RESOLVED, reason="", **base))
    assert not eligible(Decided(outcome=Outcome.RESOLVED, reason="", **{**base, "excerpt": ""}))


def test_a_reviewer_with_no_room_gets_nothing_and_the_others_theirs():
    d = Decided(1, "quality", Outcome.RESOLVED, T0, "", "m", "a.py", "a.py\n    1  x", "Fix.")
    e = Decided(2, "security", Outcome.RESOLVED, T0, "", "s", "b.py", "b.py\n    1  y", "Fix.")
    assert select_decisions([d, e], slots={"quality": 0, "security": 1}) == {"security": (e,)}


@given(decisions())
def test_a_proposal_is_a_valid_bounded_few_shot_with_the_right_roles(d):
    if not eligible(d):
        return
    shot = shot_text(d)
    FewShot.model_validate({"excerpt": shot.excerpt, "good": shot.good, "bad": shot.bad})
    assert len(shot.good) <= VERDICT_MAX_CHARS and len(shot.bad) <= VERDICT_MAX_CHARS
    if d.outcome in BAD:
        # The reviewer's words are the verdict to avoid; the person's reason the good one.
        assert d.reason.strip() in shot.good
        assert shot.bad == " ".join(d.said.split())[:VERDICT_MAX_CHARS]
    else:
        assert d.outcome in GOOD and not shot.bad
        assert " ".join(d.said.split()) in shot.good


@given(st.text(max_size=5000), st.text(max_size=5000))
def test_long_words_are_cut_to_the_bound(said, reason):
    d = Decided(1, "q", Outcome.DISMISSED, T0, reason + "x", "r", "a.py", "a.py\n    1  x", said)
    shot = shot_text(d)
    assert len(shot.good) <= VERDICT_MAX_CHARS and len(shot.bad) <= VERDICT_MAX_CHARS
    good = shot_text(Decided(1, "q", Outcome.RESOLVED, T0, reason, "r", "a.py", "x", said + "y"))
    assert len(good.good) <= VERDICT_MAX_CHARS


def test_propose_gives_each_pick_its_text():
    d = Decided(
        7,
        "security",
        Outcome.DISMISSED,
        T0,
        "The key is a test fixture's, never deployed.",
        "security",
        "shop/search.py",
        "shop/search.py\n    7  API_KEY = [REDACTED:api_key]",
        "Hard-coded API key. Move it to the environment.",
    )
    (proposed,) = propose_few_shots([d])["security"]
    assert proposed.decided is d
    assert proposed.shot.excerpt == d.excerpt
    assert proposed.shot.good == (
        "Not a finding here, as a person of the team decided: The key is a test fixture's, "
        "never deployed."
    )
    assert proposed.shot.bad == "Hard-coded API key. Move it to the environment."


# A file's lines: any text but a line break.
line_text = st.text(alphabet=st.characters(exclude_characters="\n\r"), max_size=400)
lines_maps = st.dictionaries(st.integers(min_value=1, max_value=200), line_text, max_size=120)


@given(
    lines_maps,
    st.integers(min_value=1, max_value=200),
    st.integers(min_value=0, max_value=60),
    st.integers(min_value=60, max_value=3000),
)
def test_an_excerpt_is_bounded_and_shows_the_findings_own_lines(lines, start, span, max_chars):
    end = start + span
    text = excerpt_text("app/views.py", lines, start, end, max_chars=max_chars)
    own = [n for n in range(start, min(end, start + 23) + 1) if n in lines]
    if not own:
        assert text == ""
        return
    if not text:
        return  # the finding's first line alone does not fit the bound
    assert len(text) <= max_chars
    rows = text.split("\n")
    assert rows[0] == "app/views.py"
    numbers = [
        int(r.split()[0])
        for r in rows[1:]
        if r.strip() and r.split()[0].isascii() and r.split()[0].isdigit()
    ]
    assert numbers == sorted(numbers)
    assert all(start - 2 <= n <= end + 2 and n in lines for n in numbers)
    assert any(start <= n <= end for n in numbers)


def test_an_excerpt_numbers_its_lines_marks_gaps_and_keeps_context():
    lines = {10: "def f():", 11: "    a = 1", 12: "    return a", 20: "x = 2"}
    assert excerpt_text("m.py", lines, 11, 11) == (
        "m.py\n   10  def f():\n   11      a = 1\n   12      return a"
    )
    assert excerpt_text("m.py", lines, 12, 19) == (
        "m.py\n   10  def f():\n   11      a = 1\n   12      return a\n       …\n   20  x = 2"
    )
    assert excerpt_text("m.py", lines, 15, 16) == ""


def test_a_long_file_is_cut_at_a_line_with_an_ellipsis():
    lines = {n: "x" * 100 for n in range(1, 200)}
    text = excerpt_text("big.py", lines, 50, 120)
    assert len(text) <= EXCERPT_MAX_CHARS
    assert text.endswith("…") and "\n   50  " in text


@pytest.mark.parametrize("new", list(ProposalStatus))
def test_a_proposal_is_decided_once(new):
    assert transition_allowed(ProposalStatus.PROPOSED, new) == (new != ProposalStatus.PROPOSED)
    for done in (ProposalStatus.ACCEPTED, ProposalStatus.REJECTED):
        assert not transition_allowed(done, new)
    assert set(TRANSITIONS) == set(ProposalStatus)


def test_the_default_bound_is_a_short_list():
    assert 1 <= PER_REVIEWER <= 10
