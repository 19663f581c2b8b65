"""The benchmark's Django side, in its own process against the stack's database: the seeded
workspace (a member's session cookie, the connected repository) and what the rounds left in
the rows. Import after django.setup(); every function runs on one thread (one connection)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Sum
from django.test import Client

from reviews.models import ModelCall, PipelineStep, ReviewNode, ReviewRound, ReviewSpace, Verdict
from tests.bench.burst.scenario import NAME, OWNER
from workspaces.models import Repository, RepositoryGrant
from workspaces.services import workspace_create

OPEN_STATES = ("pending", "running")


@dataclass(frozen=True)
class Seeded:
    slug: str
    cookie: tuple[str, str]  # the session cookie of a member: (name, value)


def seed() -> Seeded:
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(
        username="lead@example.com", email="lead@example.com"
    )
    workspace = workspace_create(name="Burst", owner=user)
    Repository.objects.create(
        workspace=workspace, kind="github", full_name=f"{OWNER}/{NAME}", auto_review=True
    )
    RepositoryGrant.objects.create(workspace=workspace, full_name=f"{OWNER}/{NAME}")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)  # a real session row, read by the server's session middleware
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    return Seeded(workspace.slug, (settings.SESSION_COOKIE_NAME, cookie))


@dataclass(frozen=True)
class RoundRow:
    pk: int
    number: int
    state: str
    stage: str
    head_sha: str
    created: float
    finished: float | None
    verdict: str | None
    verdict_at: float | None
    superseded_by: int | None
    error: str
    lease_held: bool
    open_steps: int


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def space_of(number: int) -> int | None:
    space = ReviewSpace.objects.filter(pull_request__number=number).values_list("pk", flat=True)
    return space.first()


def rounds_of(number: int) -> list[RoundRow]:
    rounds = ReviewRound.objects.filter(space__pull_request__number=number).order_by("number")
    verdicts = {v.round_id: v for v in Verdict.objects.filter(round__in=rounds)}
    open_steps: dict[int, int] = {}
    for round_id in PipelineStep.objects.filter(
        round__in=rounds, state__in=OPEN_STATES
    ).values_list("round_id", flat=True):
        open_steps[round_id] = open_steps.get(round_id, 0) + 1
    rows = []
    for r in rounds:
        verdict = verdicts.get(r.pk)
        rows.append(
            RoundRow(
                r.pk,
                r.number,
                r.state,
                r.stage,
                r.head_sha,
                r.created_at.timestamp(),
                _ts(r.finished_at),
                verdict.level if verdict else None,
                _ts(verdict.created_at) if verdict else None,
                r.superseded_by_id,
                r.error,
                r.lease_until is not None,
                open_steps.get(r.pk, 0),
            )
        )
    return rows


def open_rounds() -> int:
    return ReviewRound.objects.filter(state__in=OPEN_STATES).count()


def node_set(round_pk: int) -> frozenset[tuple]:
    """What a round found, comparable across rounds of the same change."""
    rows = ReviewNode.objects.filter(round_id=round_pk).values_list(
        "path", "start_line", "end_line", "type", "priority", "title", "status"
    )
    duplicates = ReviewNode.objects.filter(round_id=round_pk, duplicate_of__isnull=False).count()
    return frozenset(rows) | {("duplicates", duplicates)}


def ledger() -> dict[str, int]:
    """The spend ledger of every round: requests and prompt tokens recorded."""
    sums = ModelCall.objects.aggregate(requests=Sum("requests"), tokens=Sum("input_tokens"))
    return {
        "rows": ModelCall.objects.count(),
        "requests": sums["requests"] or 0,
        "input_tokens": sums["tokens"] or 0,
        "failed_rows": ModelCall.objects.filter(failed=True).count(),
    }
