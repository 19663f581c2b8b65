"""Few-shots proposed from decisions (docs/domain-rules.md#few-shots-from-decisions).

Every finding a person decides is a labelled example of what its reviewer got right or wrong
on this team's code: a dismissal with a reason says the reviewer was wrong there (the reviewer's
words are the verdict to avoid, the person's reason the good one); a resolve, a person's
confirmation or a disagreement decided for the reviewer's side says it was right. This module
decides which decisions make the best few-shots for a reviewer and what each proposal says.
The service (workspaces/services/few_shots.py) reads the decisions, the code excerpts (already
redacted) and stores the proposals; an admin accepts, edits or rejects them.

Pure: no Django, no clock, no files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

#: Proposals a reviewer has waiting at most: a short list an admin can read in one sitting.
PER_REVIEWER = 5
#: Lines of context shown around a finding's own lines, and the most lines an excerpt keeps.
CONTEXT_LINES = 2
EXCERPT_MAX_LINES = 24
#: Characters an excerpt and a verdict keep at most (FewShot allows 20,000 and 2,000: a
#: few-shot goes out with every request of its reviewer, so it is kept much shorter).
EXCERPT_MAX_CHARS = 1500
VERDICT_MAX_CHARS = 600
ELLIPSIS = "…"


class Outcome(StrEnum):
    """What a person decided about a reviewer's finding."""

    DISMISSED = "dismissed"  # dismissed with a reason: the reviewer was wrong here
    OVERRULED = "overruled"  # a disagreement was decided for the other side
    RESOLVED = "resolved"  # resolved (fixed): the reviewer was right
    CONFIRMED = "confirmed"  # a person confirmed it as a peer
    SIDED = "sided"  # a disagreement was decided for this reviewer's side


#: What the settings page says of each: "a finding … by a person".
OUTCOME_WORDS: Mapping[Outcome, str] = {
    Outcome.DISMISSED: "dismissed with a reason",
    Outcome.OVERRULED: "overruled in a disagreement",
    Outcome.RESOLVED: "resolved",
    Outcome.CONFIRMED: "confirmed",
    Outcome.SIDED: "upheld in a disagreement",
}

#: Outcomes that make a "good" example: what the reviewer said is the good verdict.
GOOD = frozenset({Outcome.RESOLVED, Outcome.CONFIRMED, Outcome.SIDED})
#: Outcomes that make a "bad" example; they need the person's reason, which is the good verdict.
BAD = frozenset({Outcome.DISMISSED, Outcome.OVERRULED})


class ProposalStatus(StrEnum):
    PROPOSED = "proposed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


#: A proposal is decided once: accepted (its few-shot joins the reviewer's) or rejected.
TRANSITIONS: Mapping[ProposalStatus, frozenset[ProposalStatus]] = {
    ProposalStatus.PROPOSED: frozenset({ProposalStatus.ACCEPTED, ProposalStatus.REJECTED}),
    ProposalStatus.ACCEPTED: frozenset(),
    ProposalStatus.REJECTED: frozenset(),
}


def transition_allowed(current: ProposalStatus, new: ProposalStatus) -> bool:
    return new in TRANSITIONS[current]


@dataclass(frozen=True, slots=True)
class Decided:
    """One decision on one of the reviewer's findings, as the selection reads it.

    `excerpt` is the code at the finding's lines, already redacted and bounded ("" when none
    could be read: the example would teach nothing, so it is not proposed). `said` is what the
    reviewer said (its title and body); `verdict` its priority and category, as it judged."""

    node_id: int
    reviewer: str
    outcome: Outcome
    at: datetime
    reason: str
    rule: str
    path: str
    excerpt: str
    said: str
    verdict: str = ""

    @property
    def has_reason(self) -> bool:
        return bool(self.reason.strip())

    @property
    def kind(self) -> str:
        return "good" if self.outcome in GOOD else "bad"


def eligible(decided: Decided) -> bool:
    """Whether a decision can become a few-shot: code to show, and for a "bad" example the
    person's reason (without it there is no good verdict to teach)."""
    if not decided.excerpt.strip() or not decided.said.strip():
        return False
    return decided.outcome in GOOD or decided.has_reason


def _rank(decided: Decided) -> tuple[bool, datetime, int]:
    # With a reason first (a person said why), then the most recent, then the latest finding.
    return (decided.has_reason, decided.at, decided.node_id)


@dataclass(frozen=True, slots=True)
class Covered:
    """What a reviewer's proposals (waiting or accepted) already show: a new proposal on
    another rule or file teaches more than a second one on the same."""

    rules: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()


def select_decisions(
    decided: Iterable[Decided],
    *,
    slots: Mapping[str, int] | int = PER_REVIEWER,
    covered: Mapping[str, Covered] | None = None,
) -> dict[str, tuple[Decided, ...]]:
    """The decisions to propose, per reviewer, best first: at most `slots` (per reviewer, or
    the same for all) among the eligible ones, each finding once.

    Ranked by reason given, then recency; picked so as to spread over rules and files: first
    decisions bringing a rule and a file not yet covered (by `covered` or an earlier pick), then
    a new rule, then a new file, then the rest in rank order. So when the eligible decisions
    span at least `slots` rules not yet covered, every pick shows another rule. The result does
    not depend on the order of `decided`."""
    covered = covered or {}
    by_reviewer: dict[str, dict[int, Decided]] = {}
    for d in decided:
        if not eligible(d):
            continue
        known = by_reviewer.setdefault(d.reviewer, {})
        # One finding, one decision: keep the best-ranked should it come twice.
        if d.node_id not in known or _rank(d) > _rank(known[d.node_id]):
            known[d.node_id] = d
    chosen: dict[str, tuple[Decided, ...]] = {}
    for reviewer, found in sorted(by_reviewer.items()):
        room = slots if isinstance(slots, int) else slots.get(reviewer, 0)
        picked = _spread(
            sorted(found.values(), key=_rank, reverse=True),
            room=max(room, 0),
            covered=covered.get(reviewer, Covered()),
        )
        if picked:
            chosen[reviewer] = picked
    return chosen


def _spread(ranked: list[Decided], *, room: int, covered: Covered) -> tuple[Decided, ...]:
    rules, paths = set(covered.rules), set(covered.paths)
    picked: list[Decided] = []
    taken: set[int] = set()
    # Pass 0: a new rule and a new file; 1: a new rule; 2: a new file; 3: any.
    for step in range(4):
        for d in ranked:
            if len(picked) >= room:
                return tuple(picked)
            new_rule, new_path = d.rule not in rules, d.path not in paths
            wanted = (new_rule and new_path, new_rule, new_path, True)[step]
            if d.node_id in taken or not wanted:
                continue
            picked.append(d)
            taken.add(d.node_id)
            rules.add(d.rule)
            paths.add(d.path)
    return tuple(picked)


@dataclass(frozen=True, slots=True)
class ShotText:
    """A proposal's few-shot, in the shape of workspaces.rules.FewShot."""

    excerpt: str
    good: str
    bad: str = ""


def clip(text: str, limit: int) -> str:
    """`text` stripped and cut to at most `limit` characters, marked with an ellipsis."""
    return _cut(text.strip(), limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - len(ELLIPSIS), 0)].rstrip() + ELLIPSIS


def shot_text(decided: Decided) -> ShotText:
    """What the proposal says. A "bad" example: the reviewer's words are the verdict to avoid
    and the person's reason the good verdict. A "good" one: the reviewer's words are the good
    verdict, with the person's reason when they gave one."""
    said = " ".join(decided.said.split())
    reason = " ".join(decided.reason.split())
    if decided.outcome in BAD:
        opening = (
            "Not a finding here, as a person of the team decided: "
            if decided.outcome is Outcome.DISMISSED
            else "Judged otherwise by a person of the team: "
        )
        return ShotText(
            excerpt=decided.excerpt,
            good=clip(opening + reason, VERDICT_MAX_CHARS),
            bad=clip(said, VERDICT_MAX_CHARS),
        )
    judged = f"{decided.verdict}: {said}" if decided.verdict else said
    why = f" (a person {decided.outcome.value} it: {reason})" if reason else ""
    if len(judged) + len(why) > VERDICT_MAX_CHARS:
        judged = clip(judged, max(VERDICT_MAX_CHARS - len(why), VERDICT_MAX_CHARS // 2))
    return ShotText(excerpt=decided.excerpt, good=clip(judged + why, VERDICT_MAX_CHARS))


def excerpt_text(
    path: str,
    lines: Mapping[int, str],
    start: int,
    end: int | None,
    *,
    context: int = CONTEXT_LINES,
    max_lines: int = EXCERPT_MAX_LINES,
    max_chars: int = EXCERPT_MAX_CHARS,
) -> str:
    """The code at a finding's lines `start..end` with `context` lines around them, numbered
    as in the file and headed by its path: only lines known in `lines` (a diff knows its hunks
    only; a gap is shown as "…"). At most `max_lines` lines from the first of the finding's and
    `max_chars` characters, cut at a line. "" when none of the finding's own lines is known.
    `lines` are shown as given: they are redacted before they come here."""
    end = min(max(end or start, start), start + max_lines - 1)
    if not any(n in lines for n in range(start, end + 1)):
        return ""
    first = max(start - context, 1)
    last = min(end + context, start + max_lines - 1)
    # Each row with the line number it shows (None: the path, or a gap).
    rows: list[tuple[int | None, str]] = [(None, _cut(path, max_chars // 4))]
    previous: int | None = None
    for number in range(first, last + 1):
        if number not in lines:
            continue
        if previous is not None and number != previous + 1:
            rows.append((None, _GAP))
        rows.append((number, _cut(f"{number:>5}  {lines[number]}".rstrip(), max_chars // 2)))
        previous = number
    cut = False
    while len(rows) > 1 and len("\n".join([r for _, r in rows] + [_GAP] * cut)) > max_chars:
        rows.pop()
        cut = True
    while rows[-1][0] is None and len(rows) > 1:
        rows.pop()
    if not any(number is not None and start <= number <= end for number, _ in rows):
        return ""  # the finding's own lines did not fit
    return "\n".join([r for _, r in rows] + [_GAP] * cut)


_GAP = f"{'':>5}  {ELLIPSIS}"


@dataclass(frozen=True, slots=True)
class Proposed:
    """A few-shot proposed for a reviewer, with the decision it comes from."""

    decided: Decided
    shot: ShotText


def propose_few_shots(
    decided: Iterable[Decided],
    *,
    slots: Mapping[str, int] | int = PER_REVIEWER,
    covered: Mapping[str, Covered] | None = None,
) -> dict[str, tuple[Proposed, ...]]:
    """The few-shots to propose per reviewer: `select_decisions`, each with its text."""
    return {
        reviewer: tuple(Proposed(d, shot_text(d)) for d in picked)
        for reviewer, picked in select_decisions(decided, slots=slots, covered=covered).items()
    }
