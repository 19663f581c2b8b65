"""Few-shots proposed from people's decisions: kept current, accepted, edited, rejected
(docs/domain-rules.md#few-shots-from-decisions).

Which decisions make the best few-shots, and what each says, is decided by the pure rules of
`reviews/domain/few_shots.py`; this module reads the decisions and the code, stores the
proposals and applies an admin's choice. Accepting appends the few-shot to the reviewer's
settings through the same `clean_few_shots` rule as the settings form and the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, Subquery
from django.utils import timezone

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import Actor, Target, audit_record
from reviews.domain import few_shots as fs
from reviews.domain.consensus import PERSON_PREFIX
from reviews.domain.redaction import redact_diff, redact_prose, redact_text
from reviews.domain.types import NodeStatus
from reviews.models import NodeConfirmation, ReviewNode, ReviewRound
from reviews.services.worktrees import worktree_manager
from reviews.sources.diffs import DiffParseError, parse_unified_diff
from reviews.sources.worktrees import UnsafePath, safe_join
from workspaces import rules
from workspaces.models import FewShotProposal, ReviewerConfig
from workspaces.rules import RuleError

#: The most recent decided findings of a reviewer read for proposals: recent decisions speak
#: for the team as it is, and the page stays quick however long the history.
WINDOW = 40
#: A file of the worktree larger than this is not read for an excerpt (the diff's own limit).
MAX_FILE_BYTES = 256 * 1024
#: The most few-shots a reviewer keeps (workspaces.rules.FewShots).
FEW_SHOTS_MAX = 50


class ProposalDecided(ApplicationError):
    """The proposal was already accepted or rejected (by another admin, or in another tab)."""

    code = ErrorCode.PROPOSAL_DECIDED
    http_status = 409


def _stream_names(config: ReviewerConfig) -> list[str]:
    # A stream is named after its reviewer's key; the critic's follow-up after its dimension's
    # (reviews.pipeline.model_runs.config_key).
    return [config.key, f"followup-{config.key}"]


@dataclass(frozen=True)
class _Source:
    """Where a finding's code is read: the round's stored diff, else its worktree if kept."""

    diff: str
    space_id: int
    number: int


class _Code:
    """The lines of each file a round's diff shows, per side: each diff parsed once, each file
    redacted once when a finding needs it; a line the diff does not show is read from the
    round's worktree while it is kept."""

    def __init__(self, sources: Mapping[int, _Source]) -> None:
        self._sources = sources
        self._diffs: dict[int, dict[tuple[str, str], list[tuple[int, str]]]] = {}
        self._redacted: dict[tuple[int, str, str], dict[int, str]] = {}
        self._files: dict[tuple[int, str], dict[int, str]] = {}

    def lines(self, round_id: int, path: str, side: str) -> dict[int, str]:
        key = (round_id, path, side)
        if key not in self._redacted:
            self._redacted[key] = _redacted(self._diff(round_id).get((path, side), []))
        from_diff = self._redacted[key]
        if side != "RIGHT":
            return from_diff
        return {**self._worktree(round_id, path), **from_diff}

    def _diff(self, round_id: int) -> dict[tuple[str, str], list[tuple[int, str]]]:
        if round_id in self._diffs:
            return self._diffs[round_id]

        found: dict[tuple[str, str], list[tuple[int, str]]] = {}
        source = self._sources.get(round_id)
        try:
            files = parse_unified_diff(source.diff) if source and source.diff else []
        except DiffParseError:
            files = []
        for changed in files:
            if changed.not_for_models:
                continue  # binary or too large: never sent to a model, nor proposed
            right: list[tuple[int, str]] = []
            left: list[tuple[int, str]] = []
            for hunk in changed.hunks:
                for line in hunk.lines:
                    if line.new_line is not None:
                        right.append((line.new_line, line.text))
                    if line.old_line is not None:
                        left.append((line.old_line, line.text))
            found[(changed.path, "RIGHT")] = right
            if changed.old_path:
                found[(changed.old_path, "LEFT")] = left
        self._diffs[round_id] = found
        return found

    def _worktree(self, round_id: int, path: str) -> dict[int, str]:
        key = (round_id, path)
        if key in self._files:
            return self._files[key]

        lines: dict[int, str] = {}
        source = self._sources.get(round_id)
        manager = worktree_manager()
        try:
            # Only a kept checkout is read: nothing is created (path_for makes the root).
            root = (
                manager.path_for(source.space_id, source.number)
                if source and manager.root.is_dir()
                else None
            )
            target = safe_join(root, path) if root and root.is_dir() else None
            if target and target.is_file() and target.stat().st_size <= MAX_FILE_BYTES:
                text = target.read_text(errors="replace").split("\n")
                lines = _redacted(list(enumerate(text, start=1)))
        except (UnsafePath, OSError):
            lines = {}
        self._files[key] = lines
        return lines


def _redacted(numbered: list[tuple[int, str]]) -> dict[int, str]:
    """The lines with secrets redacted as a diff's are (`redact_diff`: each line on its own,
    a private key's block whole), so a secret never reaches a proposal."""
    text = "".join(f" {line}\n" for _, line in numbered)
    clean = redact_diff(text).split("\n")
    return {number: clean[i][1:] for i, (number, _) in enumerate(numbered)}


def _outcome(node: Any, config: ReviewerConfig) -> tuple[fs.Outcome, str, datetime] | None:
    """What a person decided about the finding, why and when; None when nothing (any more)."""
    if node.decided_at is not None and node.status == NodeStatus.DISMISSED:
        return fs.Outcome.DISMISSED, node.decision_reason, node.decided_at
    if node.decided_at is not None and node.status == NodeStatus.RESOLVED:
        return fs.Outcome.RESOLVED, node.decision_reason, node.decided_at
    if node.status in (NodeStatus.DISMISSED, NodeStatus.RESOLVED):
        return None  # decided by the pipeline (the panel), not by a person
    decided = node.tags.decided
    if decided is not None and node.stream.name in _stream_names(config):
        # Only on its own finding: the finding kept by a disagreement credits the overruled
        # side's reviewers too, and its words are the other side's.
        sided = node.stream.agent in decided.side or node.stream.name in decided.side
        outcome = fs.Outcome.SIDED if sided else fs.Outcome.OVERRULED
        return outcome, decided.reason, node.updated_at
    if node.person_confirmed_at is not None:
        return fs.Outcome.CONFIRMED, node.person_confirmed_reason or "", node.person_confirmed_at
    return None


def _decided_findings(config: ReviewerConfig, *, extra_ids: Iterable[int] = ()) -> list[Any]:
    """The reviewer's most recent findings a person decided (WINDOW), and the findings
    `extra_ids` whatever their age, each annotated with its latest person's confirmation."""

    by_person = NodeConfirmation.objects.filter(
        node=OuterRef("pk"), agent__startswith=PERSON_PREFIX
    ).order_by("-created_at")
    decided = (
        Q(decided_at__isnull=False, status__in=[NodeStatus.DISMISSED, NodeStatus.RESOLVED])
        | Q(tags__has_key="decided")
        | Q(Exists(by_person))
    )
    # Its own findings, and the findings it is credited with: another reviewer's that the lead
    # pass kept for a defect both found (credited_agents holds agent names, a model reviewer's
    # being its key; matched as the quoted JSON string).
    own_or_credited = Q(stream__name__in=_stream_names(config)) | Q(
        credited_agents__icontains=f'"{config.key}"'
    )
    nodes = (
        ReviewNode.objects.filter(own_or_credited, space__workspace_id=config.workspace_id)
        .select_related("stream")
        .annotate(
            person_confirmed_at=Subquery(by_person.values("created_at")[:1]),
            person_confirmed_reason=Subquery(by_person.values("reason")[:1]),
        )
    )
    recent = list(nodes.filter(decided).order_by("-updated_at", "-pk")[:WINDOW])
    missing = set(extra_ids) - {n.pk for n in recent}
    return recent + (list(nodes.filter(pk__in=missing)) if missing else [])


def _decided(
    node: Any, config: ReviewerConfig, code: _Code, own: Any | None = None
) -> fs.Decided | None:
    """The decision as the selection reads it. `own`: the reviewer's own finding merged into
    `node` (a finding it is credited with), whose words and rule are the reviewer's."""
    found = _outcome(node, config)
    if found is None:
        return None
    outcome, reason, at = found
    words = own or node
    analyzer = words.tags.analyzer
    excerpt = ""
    if node.path and node.start_line:
        excerpt = fs.excerpt_text(
            node.path,
            code.lines(node.round_id, node.path, node.side),
            node.start_line,
            node.end_line,
        )
    return fs.Decided(
        node_id=node.pk,
        reviewer=config.key,
        outcome=outcome,
        at=at,
        reason=redact_prose(reason),
        rule=analyzer.rule if analyzer else words.category,
        path=node.path,
        excerpt=excerpt,
        said=redact_text(f"{words.title.rstrip('.')}. {words.body}".strip()),
        verdict=f"{words.priority} {words.type} ({words.category})",
    )


def _own_duplicates(config: ReviewerConfig, nodes: list[Any]) -> dict[int, Any]:
    """For each finding the reviewer is only credited with, its own finding merged into it."""

    names = _stream_names(config)
    credited = [n.pk for n in nodes if n.stream.name not in names]
    if not credited:
        return {}
    own = ReviewNode.objects.filter(duplicate_of__in=credited, stream__name__in=names).order_by(
        "pk"
    )
    found: dict[int, Any] = {}
    for dup in own:
        if dup.duplicate_of_id is not None:
            found.setdefault(dup.duplicate_of_id, dup)
    return found


def few_shot_proposals_refresh(*, config: ReviewerConfig) -> list[FewShotProposal]:
    """Bring the reviewer's waiting proposals up to date with people's decisions and return
    them, best first.

    It runs when an admin opens the reviewer's settings page (or asks the API for its
    proposals): the one place proposals are read, so they are never older than the page and
    nobody waits for them. Not on each decision: the decision services (and the person who
    decides) would pay for reading diffs and writing settings in every resolve and dismissal,
    for a list only admins read. Not a worker or a command: nothing to schedule or to forget.
    With `PER_REVIEWER` proposals waiting it reads no diff, only whether their decisions still
    stand; a decision undone since (a finding reopened) withdraws its waiting proposal.
    Idempotent: two admins opening the page at once propose each finding once."""
    with transaction.atomic(durable=True):
        cfg = ReviewerConfig.objects.select_for_update().get(pk=config.pk)
        proposals = list(cfg.few_shot_proposals.all())
        waiting = [p for p in proposals if p.status == fs.ProposalStatus.PROPOSED]
        nodes = _decided_findings(cfg, extra_ids=[p.source_node_id for p in waiting])
        still = {n.pk: found[0] for n in nodes if (found := _outcome(n, cfg)) is not None}
        withdrawn = [p.pk for p in waiting if still.get(p.source_node_id) != p.outcome]
        if withdrawn:
            FewShotProposal.objects.filter(pk__in=withdrawn).delete()
            waiting = [p for p in waiting if p.pk not in withdrawn]
        room = fs.PER_REVIEWER - len(waiting)
        taken = {p.source_node_id for p in proposals if p.pk not in withdrawn}
        fresh = [n for n in nodes if n.pk in still and n.pk not in taken]
        if room > 0 and fresh:
            _propose(cfg, fresh, room=room, proposals=proposals, withdrawn=set(withdrawn))
    return list(
        FewShotProposal.objects.filter(reviewer=config, status=fs.ProposalStatus.PROPOSED)
        .select_related("reviewer")
        .order_by("-created_at", "-pk")
    )


def _propose(
    cfg: ReviewerConfig,
    nodes: list[Any],
    *,
    room: int,
    proposals: list[FewShotProposal],
    withdrawn: set[int],
) -> None:

    rounds = ReviewRound.objects.filter(pk__in={n.round_id for n in nodes}).values_list(
        "pk", "diff", "space_id", "number"
    )
    code = _Code({pk: _Source(diff, space, number) for pk, diff, space, number in rounds})
    known = {shot["excerpt"] for shot in cfg.few_shots}
    own = _own_duplicates(cfg, nodes)
    decided = [
        d
        for n in nodes
        if (d := _decided(n, cfg, code, own.get(n.pk))) is not None and d.excerpt not in known
    ]
    shown = [
        p
        for p in proposals
        if p.pk not in withdrawn
        and p.status in (fs.ProposalStatus.PROPOSED, fs.ProposalStatus.ACCEPTED)
    ]
    covered = fs.Covered(
        rules=frozenset(p.rule for p in shown), paths=frozenset(p.path for p in shown)
    )
    chosen = fs.propose_few_shots(decided, slots=room, covered={cfg.key: covered})
    rows = [
        FewShotProposal(
            reviewer=cfg,
            source_node_id=p.decided.node_id,
            outcome=p.decided.outcome.value,
            rule=p.decided.rule[:100],
            path=p.decided.path,
            **shot,
        )
        for p in chosen.get(cfg.key, ())
        if (shot := _storable_shot(p.shot)) is not None
    ]
    # Oldest first, so the best proposal is the newest row and lists first.
    FewShotProposal.objects.bulk_create(reversed(rows), ignore_conflicts=True)


def _storable_shot(shot: fs.ShotText) -> dict[str, str] | None:
    """The proposal's text as the few-shot rule takes it (NUL characters dropped), or None in
    the unlikely case it still breaks the rule: a proposal is always acceptable as it is."""
    text = {
        "excerpt": shot.excerpt.replace("\x00", ""),
        "good": shot.good.replace("\x00", ""),
        "bad": shot.bad.replace("\x00", ""),
    }
    try:
        return _clean_shot(text)
    except RuleError:
        return None


def _locked(proposal: FewShotProposal, config: ReviewerConfig) -> FewShotProposal:
    locked = (
        FewShotProposal.objects.select_for_update()
        .select_related("reviewer__workspace")
        .get(pk=proposal.pk, reviewer=config)
    )
    if locked.status != fs.ProposalStatus.PROPOSED:
        raise ProposalDecided(
            f"This proposal was already {locked.status} "
            f"{'by ' + locked.decided_by.email if locked.decided_by else ''}".rstrip()
            + "."
        )
    return locked


def few_shot_proposal_transition(
    proposal: FewShotProposal, new: fs.ProposalStatus, *, by: Any
) -> None:
    """The one writer of FewShotProposal.status, over `reviews.domain.few_shots.TRANSITIONS`
    (the caller holds the row's lock)."""
    current = fs.ProposalStatus(proposal.status)
    if not fs.transition_allowed(current, new):
        raise ProposalDecided(f"A proposal {current} cannot become {new}.")
    proposal.status = new.value
    proposal.decided_by = by if getattr(by, "is_authenticated", False) else None
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "decided_by", "decided_at"])


def _clean_shot(shot: Mapping[str, Any]) -> dict[str, str]:
    """A few-shot as an admin gave it, checked by the rule the settings form and the API use."""
    return rules.clean_few_shots([dict(shot)])[0]


def few_shot_proposal_edit(
    *,
    proposal: FewShotProposal,
    config: ReviewerConfig,
    actor: Any,
    shot: Mapping[str, Any],
    request: Any = None,
) -> FewShotProposal:
    """An admin changes a waiting proposal's text (it stays waiting); audited with the text
    before and after."""
    clean = _clean_shot(shot)
    with transaction.atomic(durable=True):
        locked = _locked(proposal, config)
        before = locked.shot()
        if before == clean:
            return locked
        locked.excerpt, locked.good, locked.bad = clean["excerpt"], clean["good"], clean["bad"]
        locked.save(update_fields=["excerpt", "good", "bad"])
        audit_record(
            action="reviewers.few_shot_edited",
            actor=Actor.of(actor),
            workspace=locked.reviewer.workspace,
            target=Target.of(locked.reviewer),
            payload={
                "reviewer": locked.reviewer.key,
                "proposal": locked.pk,
                "before": before,
                "after": clean,
            },
            request=request,
        )
    return locked


def few_shot_proposal_accept(
    *,
    proposal: FewShotProposal,
    config: ReviewerConfig,
    actor: Any,
    shot: Mapping[str, Any] | None = None,
    request: Any = None,
) -> ReviewerConfig:
    """An admin accepts a proposal, as proposed or with `shot` (its text edited): the few-shot
    is appended to the reviewer's few-shots through `clean_few_shots`, so the reviewer's next
    request carries it. Audited with the few-shot, the finding it comes from and whether the
    admin edited it."""
    with transaction.atomic(durable=True):
        locked = _locked(proposal, config)
        cfg = ReviewerConfig.objects.select_for_update().get(pk=locked.reviewer_id)
        proposed = locked.shot()
        accepted = _clean_shot(shot if shot is not None else proposed)
        if len(cfg.few_shots) >= FEW_SHOTS_MAX:
            raise RuleError(
                f"{cfg.name} already has {FEW_SHOTS_MAX} few-shots, the most a reviewer keeps: "
                "remove one under Calibration few-shots before accepting another. Nothing was "
                "changed."
            )
        if accepted["excerpt"] in {s["excerpt"] for s in cfg.few_shots}:
            raise RuleError(
                f"{cfg.name} already has a few-shot with this code excerpt: reject this "
                "proposal, or edit the excerpt. Nothing was changed."
            )
        cfg.few_shots = rules.clean_few_shots([*cfg.few_shots, accepted])
        cfg.save(update_fields=["few_shots", "updated_at"])
        edited = accepted != proposed
        if edited:
            locked.excerpt, locked.good, locked.bad = (
                accepted["excerpt"],
                accepted["good"],
                accepted["bad"],
            )
            locked.save(update_fields=["excerpt", "good", "bad"])
        few_shot_proposal_transition(locked, fs.ProposalStatus.ACCEPTED, by=actor)
        audit_record(
            action="reviewers.few_shot_accepted",
            actor=Actor.of(actor),
            workspace=cfg.workspace,
            target=Target.of(cfg),
            payload={
                "reviewer": cfg.key,
                "proposal": locked.pk,
                "finding": locked.source_node_id,
                "outcome": locked.outcome,
                "edited": edited,
                "proposed": proposed if edited else None,
                "few_shot": accepted,
                "few_shots": len(cfg.few_shots),
            },
            request=request,
        )
    return cfg


def few_shot_proposal_reject(
    *,
    proposal: FewShotProposal,
    config: ReviewerConfig,
    actor: Any,
    request: Any = None,
) -> FewShotProposal:
    """An admin rejects a proposal: it is kept as rejected, so the same finding is never
    proposed again, and audited."""
    with transaction.atomic(durable=True):
        locked = _locked(proposal, config)
        few_shot_proposal_transition(locked, fs.ProposalStatus.REJECTED, by=actor)
        audit_record(
            action="reviewers.few_shot_rejected",
            actor=Actor.of(actor),
            workspace=locked.reviewer.workspace,
            target=Target.of(locked.reviewer),
            payload={
                "reviewer": locked.reviewer.key,
                "proposal": locked.pk,
                "finding": locked.source_node_id,
                "outcome": locked.outcome,
            },
            request=request,
        )
    return locked


PROPOSAL_ACTIONS = ("accept", "edit", "reject")


def few_shot_proposal_decide(
    *,
    proposal: FewShotProposal,
    config: ReviewerConfig,
    action: str,
    actor: Any,
    shot: Mapping[str, Any] | None = None,
    request: Any = None,
) -> None:
    """The page's and the API's one entry: accept (with `shot`, edited), edit or reject."""
    if action == "accept":
        few_shot_proposal_accept(
            proposal=proposal, config=config, actor=actor, shot=shot, request=request
        )
    elif action == "edit":
        if shot is None:
            raise RuleError("Editing a proposal needs its excerpt and good verdict.")
        few_shot_proposal_edit(
            proposal=proposal, config=config, actor=actor, shot=shot, request=request
        )
    elif action == "reject":
        few_shot_proposal_reject(proposal=proposal, config=config, actor=actor, request=request)
    else:
        raise RuleError(f"Unknown action {action!r}; use {', '.join(PROPOSAL_ACTIONS)}.")
