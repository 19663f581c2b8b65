"""Dismissal memory: which earlier dismissal a new finding repeats
(docs/domain-rules.md#dismissal-memory).

A person who dismisses a finding with a reason has said something about this team's code that
the next round should not make them say again. Two rules read those decisions back, both
non-binding (the finding is recorded, shown with the dismissed ones, and a person's reopen
brings it back like any dismissed finding):

- **Carried**: the same finding on a later round of the same review. Same fingerprint — path,
  category, title words and the code at its lines (reviews/domain/fingerprints.py) — so the
  code the person judged has not changed. The latest earlier round that had the finding
  decides: it carries only when that occurrence stands dismissed by a person with a reason
  (reopened, resolved or left open there, it does not). Only an anchored finding whose
  fingerprint holds its code carries: without the code, "unchanged" is not known.
- **Pattern**: a finding of the kind the workspace keeps dismissing as not a defect. A
  dismissal counts toward a pattern when its reason says so (`reason_kind`: intended, or a
  false positive), its path pattern is the finding's (the file, or `**` for the change as a
  whole, as `suppression_fact_for_dismissal` records it), it is about the same thing (the same
  analyzer rule; without a rule on either side, a shared defect class, or the same category and
  similar titles; never a rule against no rule), and it was at least as severe as the new
  finding (dismissing a P3 says nothing about a P1 of the same rule). A pattern needs two such
  dismissals of different findings, or one of the same finding (same fingerprint, its code
  known or no anchor). A P0 is never folded by a pattern: it blocks on its own, and only a
  decision about that finding closes it.

Everything here is a function of plain values; the lead pass (reviews/services/memory.py)
feeds it the round's canonical findings and the workspace's remembered dismissals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from .fingerprints import fingerprint
from .matching import SIMILARITY_THRESHOLD, title_similarity
from .types import Category, Priority

# --- what a reason says ---------------------------------------------------------------------


class ReasonKind(StrEnum):
    """What a dismissal's reason says about the finding."""

    INTENDED = "intended"  # the code does this on purpose
    FALSE_POSITIVE = "false_positive"  # the finding is wrong about the code
    OTHER = "other"  # anything else: later, out of scope, a duplicate, unsure, …


#: Phrases that say the code is as meant, as word sequences.
INTENDED_PHRASES: tuple[str, ...] = (
    "intended",
    "intentional",
    "intentionally",
    "on purpose",
    "by design",
    "as designed",
    "deliberate",
    "deliberately",
    "expected behaviour",
    "expected behavior",
    "works as expected",
    "as expected",
    "we want this",
)

#: Phrases that say the finding is wrong about the code.
FALSE_POSITIVE_PHRASES: tuple[str, ...] = (
    "false positive",
    "false alarm",
    "not a bug",
    "not an issue",
    "not a problem",
    "not a real",
    "not an actual",
    "no issue",
    "not applicable",
    "does not apply",
    "cannot happen",
    "never happens",
    "not reachable",
    "unreachable",
    "safe here",
    "is safe",
    "fine here",
    "harmless",
)

#: A phrase preceded by one of these (within NEGATION_WINDOW words of its clause) is denied.
NEGATORS = frozenset({"not", "no", "never", "nor", "hardly", "without"})
NEGATION_WINDOW = 3

#: Words that make the whole reason a guess rather than a statement.
HEDGES = frozenset({"maybe", "perhaps", "probably", "possibly", "might", "unsure", "unclear"})
HEDGE_PHRASES: tuple[str, ...] = ("not sure", "i think", "i guess")

# Contractions spelled out, so "isn't intended" reads "is not intended".
_CONTRACTIONS = (
    (re.compile(r"\bcan't\b"), "cannot"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\bcan not\b"), "cannot"),
)
_CLAUSE = re.compile(r"[,.;:!()\[\]\n\u2013\u2014]|\s-\s|\bbut\b")
_WORD = re.compile(r"[a-z0-9]+")


def _clauses(reason: str) -> list[list[str]]:
    text = reason.casefold().replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return [_WORD.findall(clause) for clause in _CLAUSE.split(text)]


def _occurs(words: Sequence[str], phrase: Sequence[str]) -> list[int]:
    n = len(phrase)
    return [i for i in range(len(words) - n + 1) if list(words[i : i + n]) == list(phrase)]


def _affirmed(clauses: Iterable[Sequence[str]], phrases: Iterable[str]) -> bool:
    """Some phrase occurs in some clause with no negator in the words just before it."""
    split = [p.split() for p in phrases]
    for words in clauses:
        for phrase in split:
            for at in _occurs(words, phrase):
                before = words[max(0, at - NEGATION_WINDOW) : at]
                if not NEGATORS.intersection(before):
                    return True
    return False


def reason_kind(reason: str) -> ReasonKind:
    """What a dismissal's reason says, from its words: a false positive ("false positive",
    "not a bug", "can't happen", …), intended ("on purpose", "by design", "intended", …) or
    anything else. A denied phrase ("not intended", "isn't a false positive") does not count,
    and a question or a hedge ("maybe", "probably", "not sure") makes the reason a guess: other.
    """
    if "?" in reason:
        return ReasonKind.OTHER
    clauses = _clauses(reason)
    words = [w for clause in clauses for w in clause]
    if HEDGES.intersection(words) or any(
        _occurs(clause, p.split()) for clause in clauses for p in HEDGE_PHRASES
    ):
        return ReasonKind.OTHER
    if _affirmed(clauses, FALSE_POSITIVE_PHRASES):
        return ReasonKind.FALSE_POSITIVE
    if _affirmed(clauses, INTENDED_PHRASES):
        return ReasonKind.INTENDED
    return ReasonKind.OTHER


def says_not_a_defect(reason: str) -> bool:
    return reason_kind(reason) is not ReasonKind.OTHER


# --- findings and remembered decisions --------------------------------------------------------

#: The path pattern of a finding about the change as a whole (as the suppression fact says).
WHOLE_CHANGE = "**"


def path_pattern(path: str | None) -> str:
    """The path pattern a dismissal of a finding at `path` is remembered under: the file."""
    return path or WHOLE_CHANGE


def fingerprint_holds_code(
    *, fingerprint_value: str, path: str | None, category: Category, title: str
) -> bool:
    """Whether a stored fingerprint was computed with the code at the finding's lines (the
    file's text was at hand), rather than from its path, category and title alone."""
    return bool(fingerprint_value) and fingerprint_value != fingerprint(
        path=path, category=category, title=title, code=None
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A canonical finding of the round, as the memory rules see it."""

    id: str
    fingerprint: str
    priority: Priority
    category: Category
    path: str | None
    title: str
    anchored: bool
    holds_code: bool  # its fingerprint holds the code at its lines
    rule: str | None = None  # an offline analyzer's rule
    classes: frozenset[str] = frozenset()  # named defect classes (reviews/domain/matching.py)

    @property
    def same_code_known(self) -> bool:
        """Two findings with this fingerprint are about the same code: it holds the code, or
        the finding has no lines."""
        return self.holds_code or not self.anchored


@dataclass(frozen=True, slots=True)
class Occurrence:
    """The finding with a given fingerprint on an earlier round of the same review, and the
    decision its canonical finding stands under there."""

    node_id: str
    round: int
    fingerprint: str
    dismissed: bool  # dismissed by a person (a decision is recorded), not by the panel
    by: int | None = None
    reason: str = ""
    decided_at: datetime | None = None
    carried_from: int | None = None  # itself carried: the round of the decision it carried


@dataclass(frozen=True, slots=True)
class Dismissal:
    """A person's dismissal the workspace remembers (a suppression fact and its finding), still
    standing."""

    node_id: str
    fingerprint: str
    path_pattern: str
    priority: Priority
    category: Category
    title: str
    reason: str
    decided_at: datetime
    by: int | None = None
    rule: str | None = None
    classes: frozenset[str] = frozenset()


class MemoryKind(StrEnum):
    CARRIED = "carried"  # the same finding, dismissed on an earlier round of this review
    PATTERN = "pattern"  # a kind of finding the workspace dismissed as not a defect


@dataclass(frozen=True, slots=True)
class Remembered:
    """The earlier decision a finding is recorded under: whose, why, when, and what it rests on."""

    kind: MemoryKind
    reason: str
    decided_at: datetime | None
    by: int | None
    nodes: tuple[str, ...]  # the dismissed findings it rests on
    round: int | None = None  # carried: the round whose decision it carries


def carried(candidate: Candidate, earlier: Iterable[Occurrence]) -> Remembered | None:
    """The dismissal `candidate` carries from an earlier round of its review, or None."""
    if not (candidate.anchored and candidate.holds_code and candidate.fingerprint):
        return None
    same = [o for o in earlier if o.fingerprint == candidate.fingerprint]
    if not same:
        return None
    last = max(o.round for o in same)
    latest = [o for o in same if o.round == last]
    if not all(o.dismissed and o.decided_at is not None and o.reason.strip() for o in latest):
        return None
    source = max(latest, key=lambda o: (o.decided_at or _NEVER, _id_order(o.node_id)))
    return Remembered(
        kind=MemoryKind.CARRIED,
        reason=source.reason.strip(),
        decided_at=source.decided_at,
        by=source.by,
        nodes=(source.node_id,),
        round=source.carried_from or source.round,
    )


def same_kind(candidate: Candidate, dismissal: Dismissal) -> bool:
    """Whether a dismissal is about the same kind of finding: the same analyzer rule; with no
    rule on either side, a shared defect class or the same category and similar titles."""
    if candidate.rule is not None or dismissal.rule is not None:
        return candidate.rule == dismissal.rule
    if candidate.classes & dismissal.classes:
        return True
    return (
        candidate.category == dismissal.category
        and title_similarity(candidate.title, dismissal.title) >= SIMILARITY_THRESHOLD
    )


#: Different findings a pattern needs (one is enough when it is the same finding).
PATTERN_MIN = 2


def counted_dismissals(candidate: Candidate, dismissals: Iterable[Dismissal]) -> list[Dismissal]:
    """The dismissals that speak for folding `candidate`: not itself, a reason saying it is no
    defect, its path pattern, the same kind, at least as severe."""
    pattern = path_pattern(candidate.path)
    return [
        d
        for d in dismissals
        if d.node_id != candidate.id
        and d.path_pattern == pattern
        and d.priority.rank <= candidate.priority.rank
        and same_kind(candidate, d)
        and says_not_a_defect(d.reason)
    ]


def pattern_match(candidate: Candidate, dismissals: Iterable[Dismissal]) -> Remembered | None:
    """The workspace's dismissed pattern `candidate` matches, or None (module docstring)."""
    if candidate.priority is Priority.P0:
        return None
    counted = counted_dismissals(candidate, dismissals)
    same = [
        d
        for d in counted
        if candidate.same_code_known and d.fingerprint and d.fingerprint == candidate.fingerprint
    ]
    if same:
        resting = same
    elif len({d.fingerprint or d.node_id for d in counted}) >= PATTERN_MIN:
        resting = counted
    else:
        return None
    latest = max(resting, key=lambda d: (d.decided_at, _id_order(d.node_id)))
    return Remembered(
        kind=MemoryKind.PATTERN,
        reason=latest.reason.strip(),
        decided_at=latest.decided_at,
        by=latest.by,
        nodes=tuple(sorted({d.node_id for d in resting}, key=_id_order)),
    )


def remember(
    candidate: Candidate, earlier: Iterable[Occurrence], dismissals: Iterable[Dismissal]
) -> Remembered | None:
    """The earlier decision `candidate` is recorded under: carried first, else a pattern."""
    return carried(candidate, earlier) or pattern_match(candidate, dismissals)


def _id_order(node_id: str) -> tuple[int, str]:
    return (int(node_id), "") if node_id.isascii() and node_id.isdigit() else (0, node_id)


_NEVER = datetime.min.replace(tzinfo=UTC)


# --- words ------------------------------------------------------------------------------------


def memory_words(kind: MemoryKind, *, round: int | None, count: int) -> str:
    """Where the decision comes from, for the card, the index and the report."""
    if kind is MemoryKind.CARRIED:
        return f"carried from round {round}: the code at its lines has not changed"
    if count == 1:
        return "the same finding was dismissed on another review"
    return f"{count} findings like it were dismissed in this file"


def memory_note(by: str, reason: str, words: str) -> str:
    """The sentence a folded finding shows: who dismissed it before, why, and where the
    decision comes from (`memory_words`)."""
    return f"Previously dismissed by {by} because “{reason}” ({words})"
