"""A person's decision on a disagreement between reviewers about one location.

Apart from the decisions on one finding (reviews/services/nodes.py) because a disagreement
settles a whole location at once: every node of it takes the chosen side's position, the
other canonical findings fold into the kept one, and their words are posted in its thread;
or the disputed findings are dismissed together. It sits above the node service and the
threads service, which it both uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from config.application_errors import ApplicationError, ErrorCode
from guardrails.audit import Actor as AuditActor
from guardrails.audit import Target, audit_record
from reviews.domain.disagreements import Disagreement, Settlement, find_disagreements, settle
from reviews.domain.threads import Subject
from reviews.domain.types import NodeView
from reviews.live.events import emit
from reviews.models import ReviewNode
from reviews.selectors import node_view
from reviews.services.nodes import node_dismiss, node_follow
from reviews.services.threads import Thread, message_post_reviewer


class DisagreementError(ApplicationError):
    """The disagreement is gone (already decided, a finding closed) or the decision is bad."""

    code = ErrorCode.DISAGREEMENT_REFUSED


DISAGREEMENT_DECISIONS = ("first", "second", "dismiss")

#: A side of a disagreement: the view holding its position, and the reviewers who hold it.
Side = tuple[NodeView, Sequence[str]]


def disagreement_decide(
    *,
    review_round: Any,
    key: str,
    decision: str,
    user: Any,
    reason: str = "",
    request: Any = None,
) -> list[ReviewNode]:
    """A person decides a disagreement of the round, named by its `key`.

    `first`/`second`: every node of the location — canonical findings and the duplicates that
    hold the reviewers' positions — takes that side's priority and type, and the location keeps
    one finding: the other canonical findings are folded into the chosen side's as duplicates
    (reviews/domain/disagreements.py `settle`), it credits their reviewers, and each folded
    finding's text is posted in the kept finding's thread by its reviewer, so the line has one
    card and one GitHub comment and nobody's words are lost. `dismiss`: the disputed canonical
    findings are dismissed with the reason (the ordinary dismissal: audited, remembered as a
    suppression). Either way the decision is audited and the verdict decided again. Returns the
    nodes changed."""

    if decision not in DISAGREEMENT_DECISIONS:
        raise DisagreementError(f"Unknown decision {decision!r}.")
    reason = reason.strip()
    if decision == "dismiss" and not reason:
        raise DisagreementError("Say why the findings are dismissed.")
    with transaction.atomic():
        nodes = {
            str(n.pk): n
            for n in ReviewNode.objects.filter(round=review_round)
            .select_related("stream", "space__workspace")
            .select_for_update(of=("self",))
            .order_by("pk")
        }
        views = {node_id: node_view(n, []) for node_id, n in nodes.items()}
        found = next(
            (d for d in find_disagreements(views.values()) if d.key == str(key)),
            None,
        )
        if found is None:
            raise DisagreementError("This disagreement is already decided or no longer open.")
        sides: dict[str, Side] = {
            "first": (found.first, found.first_reviewers),
            "second": (found.second, found.second_reviewers),
        }
        payload = _decision_payload(nodes[found.key], found, sides, decision, reason)
        if decision == "dismiss":
            _audit_decision(nodes[found.key], found, payload, user, request)
            return [
                node_dismiss(
                    node=nodes[node_id],
                    user=user,
                    reason=f"disagreement decided: {reason}",
                    request=request,
                )
                for node_id in found.canonical_ids
            ]
        side = sides[decision]
        settled = settle(found, "first" if decision == "first" else "second", views)
        changed = _apply_settlement(nodes, settled, side[1], user, reason)
        payload["kept"] = nodes[settled.kept].pk
        payload["folded"] = [int(i) for i in settled.folded]
        _audit_decision(nodes[found.key], found, payload, user, request)
        _after_settlement(nodes, views, settled, side, user, request)
    return changed


def _decision_payload(
    canonical: ReviewNode,
    found: Disagreement,
    sides: Mapping[str, Side],
    decision: str,
    reason: str,
) -> dict[str, Any]:
    """What the decision's audit event records: the sides as they were, and the decision."""
    return {
        "space": canonical.space_id,
        "decision": decision,
        "reason": reason,
        "location": found.first.location,
        "sides": {
            name: {
                "priority": view.priority.value,
                "type": view.type.value,
                "reviewers": list(reviewers),
            }
            for name, (view, reviewers) in sides.items()
        },
        "nodes": [int(i) for i in found.node_ids],
    }


def _audit_decision(
    canonical: ReviewNode, found: Disagreement, payload: dict[str, Any], user: Any, request: Any
) -> None:
    audit_record(
        action="disagreement.decided",
        actor=AuditActor.of(user),
        workspace=canonical.space.workspace,
        target=Target("reviewnode", found.key, f"{canonical.priority} {canonical.title}"),
        payload=payload,
        request=request,
    )


def _apply_settlement(
    nodes: Mapping[str, ReviewNode],
    settled: Settlement,
    reviewers: Sequence[str],
    user: Any,
    reason: str,
) -> list[ReviewNode]:
    """Every node of the location saved with the position, duplicate and credits `settle`
    gave it, tagged with who decided for whom and why. Returns them."""
    changed: list[ReviewNode] = []
    for after in settled.nodes:
        node = nodes[after.id]
        node.priority, node.type = after.priority.value, after.type.value
        node.severity = after.severity.value
        node.duplicate_of_id = int(after.duplicate_of) if after.duplicate_of else None
        node.credited_agents = list(after.credited_agents)
        node.tags = node.tags.with_(
            decided={"by": user.pk, "side": list(reviewers), "reason": reason}
        )
        if after.folded_into is not None:
            node.tags = node.tags.with_(folded_into=int(after.folded_into))
        node.save(
            update_fields=[
                "priority",
                "type",
                "severity",
                "duplicate_of",
                "credited_agents",
                "tags",
                "updated_at",
            ]
        )
        changed.append(node)
    return changed


def _after_settlement(
    nodes: Mapping[str, ReviewNode],
    views: Mapping[str, NodeView],
    settled: Settlement,
    side: Side,
    user: Any,
    request: Any,
) -> None:
    """The folded findings' words in the kept one's thread, the page told, and the verdict
    decided again."""
    view, reviewers = side
    kept = nodes[settled.kept]
    _fold_notes(
        kept=kept,
        folded=[(nodes[i], views[i]) for i in settled.folded],
        decided=f"{view.priority} {view.type}",
        reviewers=reviewers,
        user=user,
    )
    emit(kept.space_id, "review.disagreement_decided", node_id=kept.pk)
    node_follow(
        kept,
        f"disagreement decided for {', '.join(reviewers)}: {view.priority} {view.type}"
        + (f", #{', #'.join(settled.folded)} folded into it" if settled.folded else ""),
        actor=user,
        request=request,
    )


def _fold_notes(
    *,
    kept: ReviewNode,
    folded: Sequence[tuple[ReviewNode, Any]],
    decided: str,
    reviewers: Sequence[str],
    user: Any,
) -> None:
    """Each folded finding's words, as its reviewer wrote them, in the kept finding's thread:
    the finding no longer has a card of its own, its text is not lost."""

    thread = Thread(space=kept.space, subject=Subject.node(kept.pk), node=kept, stream=None)
    who = user.email or user.get_username()
    for node, before in folded:
        fix = node.fix_prompt or node.fix_diff or "\n".join(node.replacement_lines or ())
        parts = [
            f"Finding #{node.pk} ({before.priority} {before.type}, {before.location}) was folded "
            f"into this one when {who} decided the disagreement for {', '.join(reviewers)} "
            f"({decided}). What it said:",
            f"**{node.title}**",
            node.body,
        ]
        if fix.strip():
            parts.append(f"Suggested fix:\n\n{fix}")
        message_post_reviewer(
            thread=thread, stream=node.stream, body="\n\n".join(p for p in parts if p.strip())
        )
