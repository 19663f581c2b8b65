"""The reviews list and the guided review tab. Thin: selectors read, services write."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.application_errors import ApplicationError
from config.errors import errors_as_messages
from config.vocabulary import template_enums
from guardrails.models import ApprovalRequest
from guardrails.rules import ActionName, CheckpointOutcome
from guardrails.rules import Status as ApprovalStatus
from guardrails.services.checkpoint import CheckpointResult
from reviews.domain import consensus
from reviews.domain import threads as thread_rules
from reviews.domain import types as t
from reviews.domain.finding_groups import PageRequestError, parse_page_request
from reviews.domain.outcomes import is_process_block
from reviews.domain.report_figures import tokens_line
from reviews.domain.request_excerpt import page_note
from reviews.domain.reviewer_precision import calibrated
from reviews.domain.round_states import RoundState, can_cancel, can_rerun, state_label
from reviews.domain.space_status import (
    LADDER,
    ClosedReason,
    SpaceStatus,
    stepper,
)
from reviews.domain.tickets import TicketStatus
from reviews.domain.wording import cohort_anchor, cohort_names, disagreement_flash
from reviews.live import version as live_version
from reviews.models import (
    CohortProgress,
    ReviewerTicket,
    ReviewNode,
    ReviewRound,
    ReviewSpace,
    ThreadMessage,
    VerdictChange,
)
from reviews.reports.json_export import review_json, review_sarif
from reviews.reports.markdown import budget_page_lines, report_markdown
from reviews.selectors import (
    EAGER_COHORT_PREVIEWS,
    disagreement_round,
    page_threads,
    review_page,
    review_page_bounded,
    review_spend,
    reviewer_calibrations,
    reviewer_notes,
    round_newest,
    space_get_for_user,
    spaces_for_list,
)
from reviews.selectors.changed_files import diff_surface
from reviews.services import nodes as node_services
from reviews.services import notes as note_services
from reviews.services import threads as thread_services
from reviews.services.flags import space_flag_clear
from reviews.services.publish_plans import (
    publish_plan_current,
    publish_refusal_for,
    published_record,
)
from reviews.services.publishing import publish_request
from reviews.services.requests import ReviewRequestError, review_request
from reviews.services.rounds import (
    ReviewQueuedError,
    round_cancel,
    round_rerun,
    round_supply_request,
)
from reviews.services.viewed import file_viewed_mark
from reviews.sources.publish_plan import review_event
from reviews.web.forms import NewReviewForm, NodeActionForm
from workspaces.confirm import confirmation_page, confirmed
from workspaces.http import AuthenticatedHttpRequest, HtmxHttpRequest
from workspaces.models import Membership
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.tombstones import tombstone_or_404
from workspaces.views import member_view


def _checkpoint_message(
    request: HttpRequest, result: CheckpointResult, *, asked: str, done: str
) -> None:
    """What the checkpoint did with a person's action, as the message the next page shows."""
    if result.outcome is CheckpointOutcome.REFUSED:
        messages.error(request, result.reason)
    elif result.outcome is CheckpointOutcome.PENDING:
        number = f" #{result.request.pk}" if result.request else ""
        messages.success(request, f"{asked}{number} is waiting for an approver.")
    else:
        messages.success(request, done)


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


@member_view
@require_http_methods(["GET", "POST"])
def review_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    form = NewReviewForm(workspace=ws)
    status = 200
    if request.method == "POST":
        require(membership, Perm.START_REVIEW, attempted="start reviews", request=request)
        form = NewReviewForm(request.POST, workspace=ws)
        status = 400
        if form.is_valid():
            try:
                review_round = review_request(
                    actor=request.user, request=request, **form.cleaned_data
                )
            except ReviewRequestError as exc:
                form.add_error(None, str(exc))
            except ReviewQueuedError as exc:
                # The round exists and starts by itself later: say so, with the status that
                # tells a script to try again, and keep the page usable.
                form.add_error(None, str(exc))
                status = 503
            else:
                messages.success(
                    request, "Review started: findings appear here as reviewers report them."
                )
                return redirect("reviews:detail", ws.slug, review_round.space_id)
    filters = {
        "status": request.GET.get("status", ""),
        "verdict": request.GET.get("verdict", ""),
        "repository": request.GET.get("repository", ""),
        "flagged": "1" if request.GET.get("flagged") == "1" else "",
    }
    spaces = spaces_for_list(
        workspace_id=ws.pk,
        status=filters["status"] if filters["status"] in ReviewSpace.Status.values else "",
        verdict=filters["verdict"]
        if filters["verdict"] in t.VerdictLevel.__members__.values()
        else "",
        repository_id=int(filters["repository"]) if filters["repository"].isdigit() else None,
        flagged=bool(filters["flagged"]),
    )
    page = Paginator(spaces, 25).get_page(request.GET.get("page"))
    context = {
        "workspace": ws,
        "membership": membership,
        "page": page,
        "filters": filters,
        "statuses": [(s.value, s.label) for s in LADDER],
        "verdicts": [v.value for v in t.VerdictLevel],
        "repositories": ws.repositories.all(),
        "form": form,
        "can_start": allows(membership, Perm.START_REVIEW),
    }
    return render(request, "reviews/list.html", context, status=status)


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
    actions = {pk: node_actions_for(membership, view) for pk, view in page.views.items()}
    cohorts = page.round.stats.cohort_list if page.round else []
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
    blocked = [s for s in page.streams if is_process_block(s.error)]
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
    return {
        "workspace": membership.workspace,
        "membership": membership,
        "space": space,
        "page": page,
        "cohorts": cohorts,
        # The file tree, viewed marks and the findings shown inline in the cohort previews.
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
        "process_blocked": blocked,
        # The token budgets and what the round skipped for them (the report's Budget lines).
        "budget_lines": budget_page_lines(page.round.stats.budget) if page.round else [],
        "request_note": page_note(page.round.original_request) if page.round else "",
        "can_start": allows(membership, Perm.START_REVIEW),
        # A local repository has no GitHub to publish to: its report is downloaded instead.
        "can_publish": allows(membership, Perm.REQUEST_PUBLISH)
        and space.pull_request.repository.kind == "github",
        "publication": ApprovalRequest.objects.filter(
            workspace=membership.workspace,
            action_class=ActionName.PR_PUBLISH,
            target_type="reviewspace",
            target_id=str(space.pk),
        )
        .select_related("requester")
        .prefetch_related("decisions__approver", "notices")
        .first(),
        "ladder": [(s.value, s.label) for s in stepper(SpaceStatus(space.status))],
        "node_actions": actions,
        # The cards' confidence as the verdict read it, beside the stated one.
        "calibrated": _calibrated(space, page),
        "finding_groups": page.groups,
        "finding_count": page.finding_count,
        "findings_above": sum(g.total for g in page.groups if not g.below),
        "eager_cohorts": EAGER_COHORT_PREVIEWS,
        "priorities": [p.value for p in t.Priority],
        "can_triage": allows(membership, Perm.TRIAGE_NODES),
        "publish_event": publish_event,
        "verdict_changes": verdict_changes,
        "notes": reviewer_notes(space=space, streams=page.streams, cohorts=cohorts),
        # Cohorts are named by their main symbol wherever the page mentions one.
        "cohort_names": cohort_names(cohorts),
        "cohort_anchor_names": {cohort_anchor(k): n for k, n in cohort_names(cohorts).items()},
        "can_dismiss_tickets": allows(membership, Perm.TRIAGE_NODES),
        # A local repository has no GitHub to file in: its tickets can only be dismissed.
        "can_file_issues": allows(membership, Perm.REQUEST_PUBLISH)
        and space.pull_request.repository.kind == "github",
        "spend": _spend_context(space, page),
        **_rounds_context(membership, page, round_number),
        **_publication_context(space, page),
        **_flag_context(membership, space, page.flag),
        **_threads_context(
            membership, page_threads(space=space, review_round=page.round, streams=page.streams)
        ),
        **PAGE_VOCABULARY,
    }


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


def _round_param(request: HttpRequest) -> int | None:
    """`?round=N` from the switcher; a malformed one is a 400, an unknown one a 404."""
    raw = request.GET.get("round", "")
    if not raw:
        return None
    if not raw.isdigit() or len(raw) > 9:
        raise RuleError(f"“{raw[:40]}” is not a round number: use ?round=1, ?round=2, …")
    return int(raw)


@member_view
def review_detail(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    try:
        space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    except Http404:  # deleted for good: say what it was
        return tombstone_or_404(request, membership, kind="reviewspace", object_id=space_id)
    round_number = _round_param(request)
    # Read before the page's data: a change landing meanwhile counts as unseen, never as seen.
    version = live_version.page_token(space.pk)
    context = review_context(membership, space, round_number)
    return render(request, "reviews/detail.html", {**context, "live_version": version})


def _space_or_404(membership: Membership, space_id: int) -> ReviewSpace:
    return space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)


@member_view
@require_GET
def findings_more(request: HtmxHttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """The next page of one finding group (`?group=P1&page=2`, `&round=N` on a pinned round):
    its cards and the link to the page after. htmx appends them to the group; without
    JavaScript the link opens them as a page of their own. A malformed group or page is a 400,
    a page past the group's end a 404."""
    space = _space_or_404(membership, space_id)
    round_number = _round_param(request)
    try:
        group, number = parse_page_request(
            request.GET.get("group", ""), request.GET.get("page", "")
        )
    except PageRequestError as exc:
        raise RuleError(str(exc)) from None
    context = review_context(membership, space, round_number, group=group, page_number=number)
    shown = context["finding_groups"]
    if not shown or not shown[0].window.in_range:  # a group the round's tier has not, or past it
        raise Http404("This review has no such page of findings.")
    context["group"] = shown[0]
    context["fragment"] = bool(request.htmx)
    if not request.htmx:  # a page of its own shows no diff: every finding's card is here
        context["inline_node_ids"] = set()
    template = (
        "reviews/partials/finding_group_page.html" if request.htmx else "reviews/findings_page.html"
    )
    return render(request, template, context)


@member_view
@require_GET
def cohort_previews(
    request: HtmxHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """A cohort's diff previews, loaded when the person opens a cohort the page did not render
    them for (or, without JavaScript, as a page of their own)."""
    space = _space_or_404(membership, space_id)
    round_number = _round_param(request)
    context = review_context(membership, space, round_number, cohort_key=key[:64])
    cohort = next((c for c in context["cohorts"] if c.key == key), None)
    if cohort is None:
        raise Http404("This review has no such cohort.")
    context["cohort"] = cohort
    # Opened from the review page, the findings of this cohort already have their card in the
    # list (only the first cohorts' previews hold cards): the diff links to it instead.
    context["cards_in_list"] = bool(request.htmx)
    template = (
        "reviews/partials/cohort_previews.html" if request.htmx else "reviews/cohort_page.html"
    )
    return render(request, template, context)


@member_view
def review_report_json(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """The review as JSON (schema quorum.review/v1, the same as the API and the CLI)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    response = JsonResponse(review_json(review_page(space=space)), json_dumps_params={"indent": 2})
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="quorum-review-{space.pk}.json"'
    return response


@member_view
def review_report_sarif(
    request: HttpRequest, membership: Membership, space_id: int
) -> HttpResponse:
    """The shown round's findings as SARIF 2.1.0 (the same as GET …/sarif and the CLI's
    `--format sarif`), for GitHub code scanning or any SARIF viewer."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    log = review_sarif(review_page(space=space, round_number=_round_param(request)))
    response = JsonResponse(log, json_dumps_params={"indent": 2})
    response["Content-Type"] = "application/sarif+json"
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="quorum-review-{space.pk}.sarif"'
    return response


@member_view
@require_POST
def flag_clear(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """A person has looked at a review flagged after rounds without approval (audited)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="clear the flag for a person", request=request)
    with errors_as_messages(request):
        space_flag_clear(
            space=space, actor=request.user, note=request.POST.get("note", ""), request=request
        )
        messages.success(request, "Flag cleared: you are recorded as the person who looked.")
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


@member_view
@require_POST
def api_breaks_accept_view(
    request: HttpRequest, membership: Membership, space_id: int, number: int
) -> HttpResponse:
    """A person accepts the API breaks of the newest round, with a reason (audited)."""
    from reviews.services.api_breaks import api_breaks_accept

    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="accept an API break", request=request)
    review_round = get_object_or_404(space.rounds.all(), number=number)
    with errors_as_messages(request):
        api_breaks_accept(
            review_round=review_round,
            user=request.user,
            reason=request.POST.get("reason", ""),
            request=request,
        )
        messages.success(request, "Break accepted: the axis warns and the verdict followed.")
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


def _discussion_param(request: HttpRequest) -> bool:
    """`?discussion=1`: the report quotes every thread's messages, not only their count."""
    return request.GET.get("discussion", "") in ("1", "on", "true")


@member_view
def review_report(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    round_number = _round_param(request)
    markdown = report_markdown(
        review_page(space=space, round_number=round_number),
        discussion=_discussion_param(request),
    )
    response = HttpResponse(markdown, content_type="text/markdown; charset=utf-8")
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="quorum-review-{space.pk}.md"'
    return response


@member_view
def review_report_page(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """The markdown report read as a page (the same text as report.md, rendered safely),
    with links to the raw file."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    round_number = _round_param(request)
    discussion = _discussion_param(request)
    context = {
        "workspace": membership.workspace,
        "membership": membership,
        "space": space,
        "round_number": round_number,
        "discussion": discussion,
        "report": report_markdown(
            review_page(space=space, round_number=round_number), discussion=discussion
        ),
    }
    return render(request, "reviews/report.html", context)


@member_view
@require_POST
def node_action(
    request: HtmxHttpRequest, membership: Membership, space_id: int, node_id: int
) -> HttpResponse:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    form = NodeActionForm(request.POST)
    action = request.POST.get("action", "")
    require(
        membership, Perm.TRIAGE_NODES, attempted=f"{action or 'change'} findings", request=request
    )
    node = get_object_or_404(
        ReviewNode.objects.select_related("stream", "space"), pk=node_id, space=space
    )
    if not form.is_valid():
        raise RuleError("Unknown action, or a reason longer than 2000 characters.")
    with errors_as_messages(request):
        node_services.node_act(
            node=node,
            action=form.cleaned_data["action"],
            user=request.user,
            reason=form.cleaned_data["reason"],
            request=request,
        )
    if request.htmx:
        context = review_context(membership, space, round_number=node.round.number, focus=node.pk)
        context["node"] = context["page"].node(node.pk)
        return _node_cards(request, context)
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


def _node_cards(request: HtmxHttpRequest, context: dict) -> HttpResponse:
    """The finding's one card (in the diff or in the list, wherever it asked from), then its
    line in the findings index out of band, so both show the finding's new state at once."""
    inline = str(request.htmx.target or "").startswith("diff-")
    card = {**context, "inline": inline, "index_oob": True}
    return HttpResponse(render_to_string("reviews/partials/node.html", card, request))


@member_view
@require_POST
def disagreement_decide(
    request: HttpRequest, membership: Membership, space_id: int, node_id: int
) -> HttpResponse:
    """A person settles a disagreement: one side's priority and type, or dismiss with a reason."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="decide disagreements", request=request)
    review_round = disagreement_round(space=space, key=node_id)
    with errors_as_messages(request):
        node_services.disagreement_decide(
            review_round=review_round,
            key=str(node_id),
            decision=request.POST.get("decision", ""),
            user=request.user,
            reason=request.POST.get("reason", "")[:2000],
            request=request,
        )
        messages.success(request, disagreement_flash(request.POST.get("decision", "")))
    url = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    newest = space.rounds.order_by("-number").values_list("number", flat=True).first()
    # Back to the round the person decided on, when it is an earlier one.
    pinned = f"?round={review_round.number}" if review_round.number != newest else ""
    return redirect(f"{url}{pinned}#disagreements")


@member_view
@require_POST
def cohort_read(
    request: AuthenticatedHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """Mark a cohort read (or unread) for this person; kept by the cohort's content key."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    if request.POST.get("read") == "0":
        CohortProgress.objects.filter(user=request.user, space=space, cohort_key=key).delete()
    else:
        CohortProgress.objects.get_or_create(user=request.user, space=space, cohort_key=key[:64])
    return redirect(
        f"{reverse('reviews:detail', args=[membership.workspace.slug, space.pk])}#cohort-{key[:12]}"
    )


@member_view
@require_POST
def file_viewed(request: HtmxHttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Mark a changed file viewed (checkbox on) or not for this person. Any member may mark for
    themselves; an archived repository's review is read-only (the middleware refuses first)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    review_round = _posted_round(request, space)
    if review_round is None:
        raise Http404("This review has no round.")
    path = request.POST.get("path", "")
    with errors_as_messages(request):
        file_viewed_mark(
            space=space,
            review_round=review_round,
            user=request.user,
            path=path,
            viewed=request.POST.get("viewed") == "1",
        )
    if request.htmx:
        context = review_context(membership, space, round_number=review_round.number)
        # The answer is the htmx target itself, not an out-of-band copy like the socket's.
        return render(request, "reviews/sections/files.html", {**context, "as_target": True})
    return redirect(
        f"{reverse('reviews:detail', args=[membership.workspace.slug, space.pk])}#review-files"
    )


@member_view
@require_POST
def supply_request(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.START_REVIEW, attempted="supply the original request", request=request)
    with errors_as_messages(request):
        stream = round_supply_request(
            review_round=round_newest(space=space),
            text=request.POST.get("original_request", ""),
            actor=request.user,
            request=request,
        )
        messages.success(
            request,
            f"Thanks: the {stream.name} reviewer runs again with it." if stream else "Saved.",
        )
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


def _posted_round(request: HttpRequest, space: ReviewSpace) -> ReviewRound | None:
    """The round a form names (`round`, its number), else the newest."""
    raw = request.POST.get("round", "")
    rounds = space.rounds.order_by("-number")
    if raw.isdigit() and len(raw) < 10:
        return get_object_or_404(rounds, number=int(raw))
    return rounds.first()


@member_view
@require_POST
def cancel_round(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Cancel the running or queued round; a POST without confirm=yes changes nothing and
    asks again (works without JavaScript)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.START_REVIEW, attempted="cancel reviews", request=request)
    review_round = _posted_round(request, space)
    here = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    if review_round is None:
        return HttpResponse("This review has no round to cancel.", status=404)
    if not confirmed(request):
        finished = (
            space.rounds.filter(state=ReviewRound.State.FINISHED, number__lt=review_round.number)
            .order_by("-number")
            .first()
        )
        return confirmation_page(
            request,
            title=f"Cancel round {review_round.number} of {space.pull_request}?",
            consequences=[
                f"Round {review_round.number} ({state_label(review_round.state).lower()}) "
                "stops: its reviewers are not waited for and it gets no verdict.",
                f"The verdict and findings of round {finished.number} stay readable."
                if finished
                else "No earlier round has a verdict: the review shows none until a new round "
                "finishes.",
                "The review then says “Round cancelled”; Re-run reviews the same head again.",
            ],
            button=f"Cancel round {review_round.number}",
            cancel_url=here,
            keep="Keep it running",
            context={"workspace": membership.workspace, "membership": membership},
        )
    with errors_as_messages(request):
        round_cancel(review_round=review_round, actor=request.user, request=request)
        messages.success(request, f"Round {review_round.number} cancelled.")
    return redirect(here)


@member_view
@require_POST
def rerun_round(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Review a failed or cancelled round's head again, as a new round."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.START_REVIEW, attempted="re-run reviews", request=request)
    review_round = _posted_round(request, space)
    if review_round is None:
        return HttpResponse("This review has no round to re-run.", status=404)
    try:
        new = round_rerun(review_round=review_round, actor=request.user, request=request)
    except ReviewQueuedError as exc:
        # Not a refusal: the new round exists and starts once the queue is back.
        messages.warning(request, exc.message)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Round {review_round.number} is re-run as round {new.number} on the same head "
            f"({new.head_sha[:7]}).",
        )
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


@member_view
@require_http_methods(["GET", "POST"])
def publish(request: HttpRequest, membership: Membership, space_id: int) -> HttpResponse:
    """Preview the GitHub review, then ask the guardrails checkpoint to publish it
    (docs/domain-rules.md#publish-once-per-round)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    refusal = publish_refusal_for(space)
    if refusal is not None:
        messages.error(request, refusal)
        return redirect("reviews:detail", membership.workspace.slug, space.pk)
    if request.method == "POST":
        require(membership, Perm.REQUEST_PUBLISH, attempted="request publishing", request=request)
        with errors_as_messages(request):
            # The page publishes what the preview showed: every open finding, approving on a
            # Ship verdict (the API chooses both).
            result = publish_request(
                space=space,
                selection="all_open",
                approve_on_ship=True,
                actor=request.user,
                seen_digest=request.POST.get("plan_digest", ""),
                http_request=request,
                note=request.POST.get("note", "")[:2000],
            )
            _checkpoint_message(
                request, result, asked="Publish request", done="Published to GitHub."
            )
            return redirect("reviews:detail", membership.workspace.slug, space.pk)
        return redirect("reviews:publish", membership.workspace.slug, space.pk)
    with errors_as_messages(request):
        return render(request, "reviews/publish.html", publish_preview_context(membership, space))
    return redirect("reviews:detail", membership.workspace.slug, space.pk)


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


def _ticket_anchor(membership: Membership, space: ReviewSpace, ticket: ReviewerTicket) -> str:
    page = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
    return f"{page}#ticket-{ticket.pk}"


@member_view
@require_POST
def ticket_dismiss(
    request: HtmxHttpRequest, membership: Membership, space_id: int, ticket_id: int
) -> HttpResponse:
    """A person dismisses a reviewer's proposed ticket, with an optional reason (audited)."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.TRIAGE_NODES, attempted="dismiss reviewer tickets", request=request)
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    with errors_as_messages(request):
        note_services.ticket_dismiss(
            ticket=ticket, user=request.user, reason=request.POST.get("reason", ""), request=request
        )
        messages.success(request, f"Ticket “{ticket.title}” dismissed.")
    return redirect(_ticket_anchor(membership, space, ticket))


@member_view
@require_POST
def ticket_issue(
    request: HttpRequest, membership: Membership, space_id: int, ticket_id: int
) -> HttpResponse:
    """Ask for a reviewer's ticket to become a GitHub issue, through the guardrails checkpoint
    (issueCreate, approved like a publish). The title and body are the ones on the form."""
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.REQUEST_PUBLISH, attempted="create GitHub issues", request=request)
    ticket = get_object_or_404(ReviewerTicket, pk=ticket_id, round__space=space)
    here = _ticket_anchor(membership, space, ticket)
    with errors_as_messages(request):
        result = note_services.ticket_issue_request(
            ticket=ticket,
            actor=request.user,
            title=request.POST.get("title", ticket.title),
            body=request.POST.get("body") if "body" in request.POST else None,
            http_request=request,
        )
        _checkpoint_message(request, result, asked="Issue request", done="GitHub issue created.")
    return redirect(here)


def _thread_answer(
    request: HtmxHttpRequest, membership: Membership, thread: thread_services.Thread
) -> HttpResponse:
    """After a post or an edit: with htmx, the thread that asked (a finding has one card, in
    the diff or in the list, so one thread); without, back to the thread on the page."""
    space = thread.space
    node = thread.node
    round_number = node.round.number if node is not None else None
    if thread.stream is not None:
        round_number = thread.stream.round.number
    if not request.htmx:
        url = reverse("reviews:detail", args=[membership.workspace.slug, space.pk])
        newest = space.rounds.order_by("-number").values_list("number", flat=True).first()
        pinned = f"?round={round_number}" if round_number not in (None, newest) else ""
        return redirect(f"{url}{pinned}#thread-{thread.key.replace(':', '-')}")
    context = review_context(
        membership,
        space,
        round_number,
        focus=node.pk if node is not None else None,
    )
    inline = str(request.htmx.target or "").startswith("diff-")
    base = {**context, "key": thread.key, "thread_oob": False}
    html = render_to_string(
        "reviews/partials/thread.html", {**base, "pre": "diff-" if inline else ""}, request
    )
    return HttpResponse(html)


def _thread_space(
    membership: Membership, space_id: int, *, attempted: str, request: HttpRequest
) -> ReviewSpace:
    space = space_get_for_user(space_id=space_id, workspace_slug=membership.workspace.slug)
    require(membership, Perm.DISCUSS, attempted=attempted, request=request)
    return space


@member_view
@require_POST
def thread_post(
    request: HtmxHttpRequest, membership: Membership, space_id: int, key: str
) -> HttpResponse:
    """A person's message in a thread (reviewer role and up; a viewer's post is refused and
    audited). Refusals (an empty or too long message) are shown like every refusal."""
    space = _thread_space(membership, space_id, attempted="post in threads", request=request)
    thread = thread_services.thread_get(space=space, key=key)
    with errors_as_messages(request):
        thread_services.message_post(
            thread=thread, user=request.user, body=request.POST.get("body", "")
        )
    return _thread_answer(request, membership, thread)


@member_view
@require_POST
def thread_edit(
    request: HtmxHttpRequest, membership: Membership, space_id: int, message_id: int
) -> HttpResponse:
    """The author corrects their message within the edit window; it shows as edited."""
    space = _thread_space(membership, space_id, attempted="edit thread messages", request=request)
    message = get_object_or_404(ThreadMessage, pk=message_id, space=space)
    thread = thread_services.thread_get(space=space, key=message.subject)
    with errors_as_messages(request):
        thread_services.message_edit(
            message=message, user=request.user, body=request.POST.get("body", "")
        )
    return _thread_answer(request, membership, thread)
