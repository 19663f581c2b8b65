"""What the review page shows, as template context: the page's sections (`review_context`)
and the publish preview (`publish_preview_context`). The pages and their live sockets
(reviews/live) render the same sections, so both build them here rather than one
importing the other's views."""

from __future__ import annotations

from functools import wraps

from django.utils import timezone

from config.vocabulary import template_enums
from guardrails.models import ApprovalRequest
from guardrails.rules import ActionName
from guardrails.rules import Status as ApprovalStatus
from reviews.domain import consensus
from reviews.domain import threads as thread_rules
from reviews.domain import types as t
from reviews.domain.outcomes import is_process_block
from reviews.domain.report_figures import tokens_line
from reviews.domain.request_excerpt import page_note
from reviews.domain.reviewer_precision import calibrated
from reviews.domain.round_states import RoundState, can_cancel, can_rerun
from reviews.domain.round_stats import CohortSummary
from reviews.domain.space_status import (
    ClosedReason,
    SpaceStatus,
    stepper,
)
from reviews.domain.tickets import TicketStatus
from reviews.domain.wording import cohort_anchor, cohort_names
from reviews.models import (
    CohortProgress,
    ReviewSpace,
    ThreadMessage,
    VerdictChange,
)
from reviews.reports.markdown import budget_page_lines
from reviews.selectors import (
    EAGER_COHORT_PREVIEWS,
    ReviewPage,
    page_threads,
    review_page_bounded,
    review_spend,
    reviewer_calibrations,
    reviewer_notes,
)
from reviews.selectors.changed_files import diff_surface
from reviews.services import nodes as node_services
from reviews.services.publish_plans import publish_plan_current, published_record
from reviews.sources.publish_plan import review_event
from workspaces.models import Membership
from workspaces.permissions import allows
from workspaces.rules import Perm


def _read_only_when_archived(build):
    """A disconnected repository's reviews stay readable with no action offered: every `can_*`
    flag is off and no finding has buttons (the server refuses them too, see
    workspaces/middleware.py)."""

    @wraps(build)
    def wrapper(membership: Membership, space: ReviewSpace, *args, **kwargs) -> dict:
        context = build(membership, space, *args, **kwargs)
        repository = space.pull_request.repository
        context["archived_repository"] = repository if repository.archived_at else None
        if repository.archived_at:
            context.update({k: False for k in context if k.startswith("can_")})
            context["node_actions"] = {pk: [] for pk in context.get("node_actions", {})}
        return context

    return wrapper


#: The vocabulary the review page compares with: its templates never spell a status.
PAGE_VOCABULARY = template_enums(
    RoundState=RoundState,
    SpaceStatus=SpaceStatus,
    PublishState=t.PublishState,
    ApprovalStatus=ApprovalStatus,
    TicketStatus=TicketStatus,
    Lens=t.ConfirmationLens,
    NodeAction=consensus.Action,
    AxisResult=t.AxisResult,
    AxisName=t.AxisName,
)


def node_actions_for(membership: Membership, view: t.NodeView) -> list[str]:
    """Which buttons this person sees on a node: role first, then the status rules. A demoted
    duplicate has none: it is decided with its canonical finding."""
    if not allows(membership, Perm.TRIAGE_NODES) or view.duplicate_of is not None:
        return []
    allowed = consensus.actions_allowed(
        status=view.status,
        author_agent=view.agent,
        by=consensus.Actor.person(str(membership.user_id)),
    )
    return [a.value for a in consensus.Action if a in allowed and a in node_services.PERSON_ACTIONS]


@_read_only_when_archived
def review_context(
    membership: Membership,
    space: ReviewSpace,
    round_number: int | None = None,
    *,
    group: str | None = None,
    page_number: int = 1,
    cohort_key: str | None = None,
    focus: int | None = None,
) -> dict:
    """`round_number`: the round the person picked in the switcher (None: the default one).
    The page, its socket and its fragments share this context; it is bounded: each finding
    group holds its first cards (`group`/`page_number`: one page of one group instead), and
    only the first cohorts' previews are rendered (`cohort_key`: that cohort's instead).
    `focus`: a node whose card is needed whatever its page (after an action on it)."""
    page = review_page_bounded(
        space=space,
        round_number=round_number,
        group=group,
        page=page_number,
        cohort_key=cohort_key,
        focus=focus,
    )
    cohorts = page.round.stats.cohort_list if page.round else []
    return {
        "workspace": membership.workspace,
        "membership": membership,
        "space": space,
        "page": page,
        **_reading_context(membership, space, page, cohorts),
        "process_blocked": [s for s in page.streams if is_process_block(s.error)],
        # The token budgets and what the round skipped for them (the report's Budget lines).
        "budget_lines": budget_page_lines(page.round.stats.budget) if page.round else [],
        "request_note": page_note(page.round.original_request) if page.round else "",
        **_permissions_context(membership, space),
        "publication": _publication_request(membership, space),
        "ladder": [(s.value, s.label) for s in stepper(SpaceStatus(space.status))],
        **_findings_context(membership, space, page),
        **_verdict_context(page),
        "notes": reviewer_notes(space=space, streams=page.streams, cohorts=cohorts),
        # Cohorts are named by their main symbol wherever the page mentions one.
        "cohort_names": cohort_names(cohorts),
        "cohort_anchor_names": {cohort_anchor(k): n for k, n in cohort_names(cohorts).items()},
        "spend": _spend_context(space, page),
        **_rounds_context(membership, page, round_number),
        **_publication_context(space, page),
        **_flag_context(membership, space, page.flag),
        **_threads_context(
            membership, page_threads(space=space, review_round=page.round, streams=page.streams)
        ),
        **PAGE_VOCABULARY,
    }


def _reading_context(
    membership: Membership, space: ReviewSpace, page: ReviewPage, cohorts: list[CohortSummary]
) -> dict:
    """The cohorts and this person's reading of them; the file tree, viewed marks and the
    findings shown inline in the cohort previews."""
    # Reading progress is kept per cohort: a round without cohorts has none to read.
    read_keys = (
        set(
            CohortProgress.objects.filter(user_id=membership.user_id, space=space).values_list(
                "cohort_key", flat=True
            )
        )
        if cohorts
        else set()
    )
    return {
        "cohorts": cohorts,
        **diff_surface(
            user_id=membership.user_id,
            space=space,
            review_round=page.round,
            nodes=page.nodes,
            cohorts=cohorts,
            findings_per_path=page.findings_per_path,
            rendered_lines=page.inline_at,
        ),
        "read_keys": read_keys,
        "cohorts_read": sum(1 for c in cohorts if c.key in read_keys),
    }


def _permissions_context(membership: Membership, space: ReviewSpace) -> dict:
    """What the person's role allows on the page (every `can_*` flag but the rounds')."""
    # A local repository has no GitHub to publish to or file in: its report is downloaded
    # instead, and its tickets can only be dismissed.
    on_github = space.pull_request.repository.kind == "github"
    return {
        "can_start": allows(membership, Perm.START_REVIEW),
        "can_publish": allows(membership, Perm.REQUEST_PUBLISH) and on_github,
        "can_triage": allows(membership, Perm.TRIAGE_NODES),
        "can_dismiss_tickets": allows(membership, Perm.TRIAGE_NODES),
        "can_file_issues": allows(membership, Perm.REQUEST_PUBLISH) and on_github,
    }


def _publication_request(membership: Membership, space: ReviewSpace) -> ApprovalRequest | None:
    """The space's publish request, with its decisions and notices."""
    return (
        ApprovalRequest.objects.filter(
            workspace=membership.workspace,
            action_class=ActionName.PR_PUBLISH,
            target_type="reviewspace",
            target_id=str(space.pk),
        )
        .select_related("requester")
        .prefetch_related("decisions__approver", "notices")
        .first()
    )


def _findings_context(membership: Membership, space: ReviewSpace, page: ReviewPage) -> dict:
    """The finding groups with their cards' buttons and calibrated confidence."""
    return {
        "node_actions": {pk: node_actions_for(membership, view) for pk, view in page.views.items()},
        # The cards' confidence as the verdict read it, beside the stated one.
        "calibrated": _calibrated(space, page),
        "finding_groups": page.groups,
        "finding_count": page.finding_count,
        "findings_above": sum(g.total for g in page.groups if not g.below),
        "eager_cohorts": EAGER_COHORT_PREVIEWS,
        "priorities": [p.value for p in t.Priority],
    }


def _verdict_context(page: ReviewPage) -> dict:
    """What a publish would post now and the verdict's latest changes."""
    # What a publish would post now follows the current verdict (the preview page plans it in
    # full against GitHub); the header says it so a decision's effect shows at once.
    publish_event = (
        review_event(page.verdict.level.capitalize(), approve_on_ship=True) if page.verdict else ""
    )
    verdict_changes = (
        list(VerdictChange.objects.filter(round=page.round).order_by("-id")[:5])
        if page.round
        else []
    )
    return {"publish_event": publish_event, "verdict_changes": verdict_changes}


def _calibrated(space: ReviewSpace, page) -> dict:
    """Node id → its confidence calibrated by its reviewer's decisions on other rounds, for the
    findings whose reviewer has enough of them (docs/domain-rules.md#calibrated-confidence)."""
    if page.round is None or not page.views:
        return {}
    calibrations = reviewer_calibrations(space.workspace_id, exclude_round=page.round.pk)
    return {int(k): v for k, v in calibrated(page.views.values(), calibrations).items()}


def _threads_context(membership: Membership, threads: dict[str, list[ThreadMessage]]) -> dict:
    """The page's threads by subject, which messages this person may still edit (the only
    per-person part: the live socket keys its shared renders by it too) and whether the role
    may post."""
    now = timezone.now()
    editable = {
        m.pk
        for messages in threads.values()
        for m in messages
        if m.source != thread_rules.Source.GITHUB
        and not thread_rules.edit_refusal(
            author_id=m.author_id, editor_id=membership.user_id, created_at=m.created_at, now=now
        )
    }
    return {
        "threads": threads,
        "editable_ids": editable,
        "can_discuss": allows(membership, Perm.DISCUSS),
    }


def _spend_context(space: ReviewSpace, page) -> dict:
    """What the shown round's model calls cost, and the pull request's total over its rounds."""
    of_round, of_review = review_spend(space, page.round)
    of_pr = of_review.total
    return {
        "round": of_round,
        "round_line": tokens_line(of_round.total) if of_round and of_round.total.calls else "",
        "rows": [(r.key, tokens_line(r.totals)) for r in of_round.by_role] if of_round else [],
        "pr_line": tokens_line(of_pr) if of_pr.calls else "",
        "unpriced": sorted(set(of_pr.unpriced) | set(of_round.unpriced if of_round else ())),
        "counted_locally": of_round.total.counted_locally if of_round else 0,
    }


def _publication_context(space: ReviewSpace, page) -> dict:
    """The shown round's one GitHub review (who asked, who approved, when), read fresh: the
    live page re-renders with the space it loaded at connect time."""
    newest = page.rounds[-1] if page.rounds else None
    published = published_record(page.round)
    return {
        "is_local": space.pull_request.repository.kind != "github",
        "published": published,
        "newest_published": published
        if newest is not None and page.round is not None and newest.pk == page.round.pk
        else published_record(newest),
    }


def _flag_context(membership: Membership, space: ReviewSpace, read: dict | None = None) -> dict:
    """The flag for a person (two rounds without approval), read fresh like the publication
    (`read`: as the selector read it with the rounds)."""
    flag = (
        read
        if read is not None
        else ReviewSpace.objects.filter(pk=space.pk)
        .values("flagged_for_human", "flagged_at", "flag_reason")
        .first()
    )
    return {
        "flag": flag if flag and flag["flagged_for_human"] else None,
        "can_clear_flag": allows(membership, Perm.TRIAGE_NODES),
    }


def _rounds_context(membership: Membership, page, round_number: int | None) -> dict:
    """The round switcher, the newest round's fate when it ended without a verdict (with its
    re-run), each finding's delta label and the space's status in words."""
    newest = page.newest
    may_start = allows(membership, Perm.START_REVIEW)
    return {
        "pinned_round": round_number,
        "status_label": SpaceStatus(page.space.status).label,
        "newest_round": newest,
        "can_cancel": may_start and newest is not None and can_cancel(newest.state),
        "can_rerun": may_start
        and newest is not None
        and can_rerun(newest.state)
        and page.space.pull_request.repository.archived_at is None
        and page.space.closed_reason not in (ClosedReason.MERGED, ClosedReason.CLOSED),
        "delta_labels": {n.pk: page.delta_view.label(n.fingerprint) for n in page.nodes},
    }


@_read_only_when_archived
def publish_preview_context(membership: Membership, space: ReviewSpace) -> dict:
    """What the preview shows, planned against GitHub now (the page, and its socket after a
    verdict change). Raises PublishError when nothing can be planned."""
    current = publish_plan_current(space=space, selection="all_open", approve_on_ship=True)
    return {
        "workspace": membership.workspace,
        "membership": membership,
        "space": space,
        "plan": current.plan,
        "payload": current.payload(space=space, selection="all_open", approve_on_ship=True),
        "can_request": allows(membership, Perm.REQUEST_PUBLISH),
    }
