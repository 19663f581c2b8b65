"""What someone outside the pipeline does to a review's findings through the MCP tools: add a
finding, confirm one, resolve or dismiss one.

The caller is a user loaded from an API token: an agent's token sets `quorum_agent` on it
(workspaces/services/tokens.py). An agent's identity for consensus is its person's id and its
name, so two agents of one person are peers of each other but neither can confirm what it
wrote itself; a person's token acts as the person, exactly like the page's buttons.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews.domain import consensus
from reviews.domain import types as t
from reviews.domain.round_states import RoundState
from reviews.domain.stream_states import StreamState
from reviews.models import ReviewerStream, ReviewNode, ReviewRound
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_follow, person_action
from reviews.services.streams import stream_transition


class FindingRefused(ApplicationError):
    """The finding was not recorded; the message lists the reasons."""

    code = ErrorCode.FINDING_REFUSED
    http_status = 422


def caller_actor(user: Any) -> consensus.Actor:
    """Who the caller is for consensus: `agent:<person id>:<agent name>`, or the person."""
    if agent := getattr(user, "quorum_agent", ""):
        return consensus.outside_agent(user.pk, agent)
    return consensus.Actor.person(str(user.pk))


def reviewer_labels(identities: Iterable[str]) -> dict[str, str]:
    """Stored reviewer identities as people read them: an outside agent's
    `agent:<person id>:<name>` is "agent <name> for <their email>", a person's `person:<id>`
    their email; a pipeline reviewer's name stays as it is. One query for all of them."""
    parsed: dict[str, tuple[int, str]] = {}
    for identity in identities:
        _, _, rest = identity.partition(":")
        if identity.startswith(consensus.OUTSIDE_AGENT_PREFIX):
            pid, _, name = rest.partition(":")
        elif identity.startswith(consensus.PERSON_PREFIX):
            pid, name = rest, ""
        else:
            continue
        if pid.isdigit():
            parsed[identity] = (int(pid), name)
    emails = dict(
        get_user_model()
        .objects.filter(pk__in={pid for pid, _ in parsed.values()})
        .values_list("pk", "email")
    )
    labels = {}
    for identity, (person, agent) in parsed.items():
        email = emails.get(person) or "a former member"
        labels[identity] = f"agent {agent} for {email}" if agent else email
    return labels


def _stream_for(review_round: ReviewRound, user: Any) -> ReviewerStream:
    actor = caller_actor(user)
    agent = getattr(user, "quorum_agent", "")
    name = f"agent {agent}" if agent else (user.email or user.get_username())
    stream, created = ReviewerStream.objects.get_or_create(
        round=review_round,
        agent=consensus.person_identity(actor),
        # The name is shown as the finding's author on the page and in the report.
        defaults={"name": name[:60], "kind": t.StreamKind.EXTERNAL.value},
    )
    if created:
        # Its work is done as it is written: the pipeline has nothing to run for it.
        stream_transition(stream, StreamState.RUNNING)
        stream_transition(stream, StreamState.DONE)
    return stream


def node_add_outside(
    *, review_round: ReviewRound, user: Any, payload: Any, request: Any = None
) -> ReviewNode:
    """Record a finding from outside the pipeline on a finished round, with the pipeline's own
    validation; the verdict is decided again. A payload that does not validate creates nothing
    and raises FindingRefused with every reason."""
    if review_round.state != RoundState.FINISHED:
        raise ApplicationError(
            f"Round {review_round.number} is {review_round.state}: add findings once it has "
            "finished, so they are judged with the rest.",
            code=ErrorCode.ROUND_NOT_FINISHED,
            http_status=409,
        )
    with transaction.atomic():
        stream = _stream_for(review_round, user)
        result = node_record(stream=stream, payload=payload)
        if result.node is None:
            raise FindingRefused(f"The finding was not recorded: {result.rejection}")
        node = result.node
        if result.created:
            audit_record(
                action="node.added",
                actor=AuditActor.of(user),
                workspace=review_round.space.workspace,
                target=Target("reviewnode", str(node.pk), f"{node.priority} {node.title}"),
                payload={"space": review_round.space_id, "round": review_round.number},
                request=request,
            )
            node_follow(node, f"added by {stream.name}", actor=user, request=request)
    return node


def node_act_outside(
    *, node: ReviewNode, action: consensus.Action, user: Any, reason: str = "", request: Any = None
) -> ReviewNode:
    """Confirm, resolve or dismiss as the caller: an agent may only confirm a peer's finding
    (consensus refuses the rest), a person may do what the page lets them."""
    return person_action(
        action, node=node, user=user, reason=reason, request=request, by=caller_actor(user)
    )
