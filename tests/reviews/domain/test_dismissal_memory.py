"""Dismissal memory: what a reason says, which earlier dismissal a finding repeats, and never
folding what a person did not dismiss (reviews/domain/dismissal_memory.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.dismissal_memory import (
    FALSE_POSITIVE_PHRASES,
    INTENDED_PHRASES,
    NEGATORS,
    PATTERN_MIN,
    WHOLE_CHANGE,
    Candidate,
    Dismissal,
    MemoryKind,
    Occurrence,
    ReasonKind,
    carried,
    counted_dismissals,
    fingerprint_holds_code,
    path_pattern,
    pattern_match,
    reason_kind,
    remember,
    same_kind,
)
from reviews.domain.fingerprints import fingerprint
from reviews.domain.types import Category, Priority

# --- what a reason says -----------------------------------------------------------------------

# Words that say nothing about intent or correctness, to surround the phrases with.
NEUTRAL = st.sampled_from(
    ["the", "value", "comes", "from", "config", "we", "use", "it", "for", "retries", "this",
     "helper", "in", "tests", "only", "here", "list", "is", "bounded", "jitter", "timeout",
     "see", "ticket", "1234", "docs", "say", "so"]
)  # fmt: skip
neutral_text = st.lists(NEUTRAL, max_size=8).map(" ".join)
intended = st.sampled_from(INTENDED_PHRASES)
false_positive = st.sampled_from(FALSE_POSITIVE_PHRASES)


@given(neutral_text, intended, neutral_text)
def test_an_intent_phrase_among_neutral_words_says_intended(before, phrase, after):
    assert reason_kind(f"{before} {phrase} {after}") is ReasonKind.INTENDED


@given(neutral_text, false_positive, neutral_text)
def test_a_false_positive_phrase_among_neutral_words_says_false_positive(before, phrase, after):
    assert reason_kind(f"{before} {phrase} {after}") is ReasonKind.FALSE_POSITIVE


@given(neutral_text)
def test_neutral_words_say_nothing(text):
    assert reason_kind(text) is ReasonKind.OTHER


@given(neutral_text, st.sampled_from(sorted(NEGATORS)), st.one_of(intended, false_positive))
def test_a_denied_phrase_does_not_count(before, negator, phrase):
    """ "not intended", "never on purpose", "not a false positive": the words say the opposite
    (phrases that begin with a denial of their own, like "not a bug", are left out)."""
    if phrase.split()[0] in NEGATORS:
        return
    assert reason_kind(f"{before} {negator} {phrase}") is ReasonKind.OTHER


@given(neutral_text, st.one_of(intended, false_positive), st.sampled_from(["maybe", "probably"]))
def test_a_guess_or_a_question_is_not_a_statement(before, phrase, hedge):
    assert reason_kind(f"{hedge} {before} {phrase}") is ReasonKind.OTHER
    assert reason_kind(f"{before} {phrase}?") is ReasonKind.OTHER


@given(
    st.lists(st.one_of(NEUTRAL, intended, false_positive), max_size=8).map(" ".join),
    st.sampled_from([str.upper, str.title, lambda s: "  " + s.replace(" ", "   ") + " \n"]),
)
def test_case_and_spacing_do_not_matter(text, spell):
    assert reason_kind(spell(text)) is reason_kind(text)


@given(st.text(max_size=300))
def test_any_text_has_a_kind(text):
    assert reason_kind(text) in set(ReasonKind)


def test_reasons_people_write():
    assert reason_kind("False positive: the table name comes from a constant") is (
        ReasonKind.FALSE_POSITIVE
    )
    assert reason_kind("Intended: best-effort cleanup, errors are logged") is ReasonKind.INTENDED
    assert reason_kind("It isn't by design, we'll fix it later") is ReasonKind.OTHER
    assert reason_kind("can't happen, the list is never empty") is ReasonKind.FALSE_POSITIVE
    assert reason_kind("No, this is on purpose") is ReasonKind.INTENDED
    assert reason_kind("out of scope for this PR") is ReasonKind.OTHER
    assert reason_kind("withdrawn by its reviewer") is ReasonKind.OTHER
    assert reason_kind("unintended, will fix") is ReasonKind.OTHER


# --- findings and dismissals ------------------------------------------------------------------

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
PATHS = ["app/jitter.py", "app/tokens.py", "app/reports.py", "tests/test_app.py", None]
RULES = [None, "B311", "B608", "F401", "E722"]
FINGERPRINTS = ["fp-a", "fp-b", "fp-c", "fp-d"]
REASONS = [
    "false positive: jitter, not security",
    "intended, see the docs",
    "by design",
    "will fix in a follow-up",
    "out of scope",
    "not a bug",
    "",
]

priorities = st.sampled_from(list(Priority))


@st.composite
def candidates(draw) -> Candidate:
    path = draw(st.sampled_from(PATHS))
    anchored = path is not None and draw(st.booleans())
    return Candidate(
        id=str(draw(st.integers(1000, 1100))),
        fingerprint=draw(st.sampled_from(FINGERPRINTS)),
        priority=draw(priorities),
        category=draw(st.sampled_from([Category.SECURITY, Category.CORRECTNESS])),
        path=path,
        title=draw(st.sampled_from(["Weak random", "Query built from text", "Unused import"])),
        anchored=anchored,
        holds_code=anchored and draw(st.booleans()),
        rule=draw(st.sampled_from(RULES)),
        classes=frozenset(draw(st.sets(st.sampled_from(["sql-injection", "weak-random"])))),
    )


@st.composite
def dismissals(draw) -> Dismissal:
    return Dismissal(
        node_id=str(draw(st.integers(1, 200))),
        fingerprint=draw(st.sampled_from(FINGERPRINTS)),
        path_pattern=path_pattern(draw(st.sampled_from(PATHS))),
        priority=draw(priorities),
        category=draw(st.sampled_from([Category.SECURITY, Category.CORRECTNESS])),
        title=draw(st.sampled_from(["Weak random", "Query built from text", "Unused import"])),
        reason=draw(st.sampled_from(REASONS)),
        decided_at=T0 + timedelta(minutes=draw(st.integers(0, 10_000))),
        by=draw(st.sampled_from([1, 2, None])),
        rule=draw(st.sampled_from(RULES)),
        classes=frozenset(draw(st.sets(st.sampled_from(["sql-injection", "weak-random"])))),
    )


@st.composite
def scenes(draw) -> tuple[Candidate, list[Dismissal]]:
    """A finding and dismissals of other findings that each share some of its traits (its rule,
    path, kind, fingerprint), so that patterns are both met and missed."""
    candidate = draw(candidates())
    remembered = []
    for number, d in enumerate(draw(st.lists(dismissals(), max_size=8)), start=1):
        like = draw(st.sets(st.sampled_from(["rule", "path", "fingerprint", "priority"])))
        remembered.append(
            replace(
                d,
                node_id=str(number),  # a finding's id is unique
                rule=candidate.rule if "rule" in like else d.rule,
                path_pattern=path_pattern(candidate.path) if "path" in like else d.path_pattern,
                fingerprint=candidate.fingerprint if "fingerprint" in like else d.fingerprint,
                priority=candidate.priority if "priority" in like else d.priority,
            )
        )
    return candidate, remembered


@given(scenes())
def test_a_pattern_never_folds_a_finding_whose_rule_or_path_differs(scene):
    candidate, remembered = scene
    found = pattern_match(candidate, remembered)
    if found is None:
        return
    resting = [d for d in remembered if d.node_id in found.nodes]
    assert resting
    for d in resting:
        assert d.path_pattern == path_pattern(candidate.path)
        if candidate.rule is not None or d.rule is not None:
            assert d.rule == candidate.rule
        assert reason_kind(d.reason) is not ReasonKind.OTHER
        assert d.priority.rank <= candidate.priority.rank
    others = [
        d
        for d in remembered
        if d.path_pattern != path_pattern(candidate.path)
        or ((candidate.rule or d.rule) and d.rule != candidate.rule)
    ]
    assert pattern_match(candidate, others) is None


@given(scenes())
def test_a_pattern_needs_two_findings_or_the_same_one(scene):
    candidate, remembered = scene
    found = pattern_match(candidate, remembered)
    counted = counted_dismissals(candidate, remembered)
    same = [d for d in counted if d.fingerprint == candidate.fingerprint]
    distinct = {d.fingerprint for d in counted}
    expected = candidate.priority is not Priority.P0 and (
        (same and candidate.same_code_known) or len(distinct) >= PATTERN_MIN
    )
    assert (found is not None) == bool(expected)
    if found is not None:
        assert found.kind is MemoryKind.PATTERN
        latest = max(
            (d for d in remembered if d.node_id in found.nodes), key=lambda d: d.decided_at
        )
        assert found.decided_at == latest.decided_at


@given(scenes(), st.randoms())
def test_a_pattern_does_not_depend_on_the_order_of_the_dismissals(scene, rnd):
    candidate, remembered = scene
    shuffled = list(remembered)
    rnd.shuffle(shuffled)
    assert pattern_match(candidate, remembered) == pattern_match(candidate, shuffled)


@given(scenes())
def test_a_p0_is_never_folded_by_a_pattern(scene):
    candidate, remembered = scene
    assert pattern_match(replace(candidate, priority=Priority.P0), remembered) is None


@given(scenes())
def test_reasons_that_say_nothing_make_no_pattern(scene):
    candidate, remembered = scene
    vague = [replace(d, reason="will fix in a follow-up") for d in remembered]
    assert pattern_match(candidate, vague) is None


def test_a_rule_never_matches_no_rule_and_words_match_without_rules():
    finding = Candidate(
        id="9",
        fingerprint="fp",
        priority=Priority.P2,
        category=Category.SECURITY,
        path="app/reports.py",
        title="Query built from the report name",
        anchored=True,
        holds_code=True,
        classes=frozenset({"sql-injection"}),
    )
    words = Dismissal(
        node_id="1",
        fingerprint="fp-1",
        path_pattern="app/reports.py",
        priority=Priority.P2,
        category=Category.SECURITY,
        title="SQL string formatting",
        reason="false positive",
        decided_at=T0,
        classes=frozenset({"sql-injection"}),
    )
    assert same_kind(finding, words)
    assert not same_kind(replace(finding, rule="B608"), words)
    assert same_kind(replace(finding, rule="B608"), replace(words, rule="B608"))
    similar = replace(words, classes=frozenset(), title="Query built from the report title")
    assert same_kind(replace(finding, classes=frozenset()), similar)
    assert not same_kind(replace(finding, classes=frozenset()), replace(similar, title="Other"))


# --- carried from an earlier round of the review ------------------------------------------------


def _candidate(**overrides) -> Candidate:
    fields = {
        "id": "50",
        "fingerprint": "fp-a",
        "priority": Priority.P2,
        "category": Category.SECURITY,
        "path": "app/jitter.py",
        "title": "Weak random",
        "anchored": True,
        "holds_code": True,
        "rule": "B311",
    }
    return Candidate(**{**fields, **overrides})


occurrences = st.builds(
    Occurrence,
    node_id=st.integers(1, 40).map(str),
    round=st.integers(1, 5),
    fingerprint=st.sampled_from(["fp-a", "fp-a", "fp-b"]),
    dismissed=st.booleans(),
    by=st.sampled_from([1, 2, None]),
    reason=st.sampled_from(REASONS),
    decided_at=st.one_of(st.none(), st.integers(0, 1000).map(lambda m: T0 + timedelta(minutes=m))),
    carried_from=st.one_of(st.none(), st.integers(1, 5)),
)


@given(st.lists(occurrences, max_size=10, unique_by=lambda o: o.node_id))
def test_the_latest_earlier_occurrence_decides_whether_a_dismissal_carries(earlier):
    candidate = _candidate()
    found = carried(candidate, earlier)
    same = [o for o in earlier if o.fingerprint == candidate.fingerprint]
    if not same:
        assert found is None  # the code at its lines changed: a new fingerprint, nothing to carry
        return
    last = max(o.round for o in same)
    latest = [o for o in same if o.round == last]
    stands = all(o.dismissed and o.decided_at and o.reason.strip() for o in latest)
    assert (found is not None) == stands
    if found is not None:
        source = next(o for o in latest if o.node_id == found.nodes[0])
        assert found.kind is MemoryKind.CARRIED
        assert (found.reason, found.by, found.decided_at) == (
            source.reason.strip(),
            source.by,
            source.decided_at,
        )
        assert found.round == (source.carried_from or source.round)


@given(st.lists(occurrences, max_size=10, unique_by=lambda o: o.node_id), st.booleans())
def test_only_an_anchored_finding_whose_fingerprint_holds_its_code_carries(earlier, anchored):
    candidate = _candidate(anchored=anchored, holds_code=False)
    assert carried(candidate, earlier) is None


def test_a_reopen_on_a_later_round_stops_the_carry():
    decided = Occurrence("1", 1, "fp-a", True, 7, "by design", T0)
    reopened = Occurrence("2", 2, "fp-a", False)
    assert carried(_candidate(), [decided]) is not None
    assert carried(_candidate(), [decided, reopened]) is None
    # A dismissal without a reason is not carried; nor is one the panel made (no decision).
    assert carried(_candidate(), [replace(decided, reason=" ")]) is None
    assert carried(_candidate(), [replace(decided, decided_at=None)]) is None


def test_carried_comes_first_then_a_pattern():
    decided = Occurrence("1", 1, "fp-a", True, 7, "later", T0)
    twice = [
        Dismissal("3", "fp-b", "app/jitter.py", Priority.P2, Category.SECURITY, "Weak random",
                  "false positive", T0, 8, "B311"),
        Dismissal("4", "fp-c", "app/jitter.py", Priority.P2, Category.SECURITY, "Weak random",
                  "not a bug", T0 + timedelta(days=1), 9, "B311"),
    ]  # fmt: skip
    assert remember(_candidate(), [decided], twice).kind is MemoryKind.CARRIED
    found = remember(_candidate(fingerprint="fp-z"), [decided], twice)
    assert found.kind is MemoryKind.PATTERN and found.by == 9 and found.nodes == ("3", "4")
    assert remember(_candidate(fingerprint="fp-z"), [decided], twice[:1]) is None
    # One dismissal of the very same finding is enough.
    assert remember(_candidate(fingerprint="fp-b"), [], twice[:1]).nodes == ("3",)


def test_the_fingerprint_says_whether_it_holds_the_code():
    with_code = fingerprint(
        path="a.py", category=Category.SECURITY, title="Weak random", code=["x = 1"]
    )
    without = fingerprint(path="a.py", category=Category.SECURITY, title="Weak random", code=None)
    common = {"path": "a.py", "category": Category.SECURITY, "title": "Weak random"}
    assert fingerprint_holds_code(fingerprint_value=with_code, **common)
    assert not fingerprint_holds_code(fingerprint_value=without, **common)
    assert path_pattern(None) == WHOLE_CHANGE
