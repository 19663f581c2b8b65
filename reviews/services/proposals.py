"""A reviewer's proposal about its own finding, decided by a person in the finding's thread.

Apart from the threads service because accepting one changes the finding through the node
service, which the threads service must not import: the change a proposal makes to its
finding (a lower priority, a withdrawal, a refined fix) is here too.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.application_errors import ErrorCode
from guardrails.audit import Actor, Target, audit_record
from reviews.domain import consensus
from reviews.domain import threads as rules
from reviews.domain.redaction import redact_text
from reviews.domain.threads import Proposal, ProposalKind, proposal_problem
from reviews.domain.types import Priority, severity_for_priority
from reviews.live.events import emit
from reviews.models import ReviewNode, ThreadMessage
from reviews.services.nodes import node_dismiss, node_follow, node_locked, refuse_duplicate
from reviews.services.threads import ThreadRefused, emit_thread, message_proposal


def proposal_decide(
    *, message: ThreadMessage, accept: bool, user: Any, request: Any = None
) -> ThreadMessage:
    """A person accepts or rejects a reviewer's proposal about its own finding, once. Accepted,
    the finding changes through the node service (its own audit event; the verdict follows);
    either way the decision is audited as the thread's. The caller has checked the role."""

    with transaction.atomic():
        locked = (
            ThreadMessage.objects.select_for_update(of=("self",))
            .select_related("node", "space__workspace")
            .get(pk=message.pk)
        )
        proposal = message_proposal(locked)
        if proposal is None or locked.node is None:
            raise ThreadRefused("This message proposes nothing.", http_status=404)
        if locked.proposal_state != rules.ProposalState.OPEN:
            raise ThreadRefused(
                f"This proposal is already {locked.proposal_state}.", http_status=409
            )
        state = rules.ProposalState.ACCEPTED if accept else rules.ProposalState.REJECTED
        node = locked.node
        audit_record(
            action=f"thread.proposal_{state.value}",
            actor=Actor.of(user),
            workspace=locked.space.workspace,
            target=Target("reviewnode", str(node.pk), f"{node.priority} {node.title}"),
            payload={
                "space": locked.space_id,
                "message": locked.pk,
                "reviewer": locked.author_label,
                "proposal": rules.proposal_words(proposal),
            },
            request=request,
        )
        if accept:
            # After the thread's event, so the trail reads decision, node change, verdict.
            node_apply_proposal(node=node, proposal=proposal, user=user, request=request)
        now = timezone.now()
        ThreadMessage.objects.filter(pk=locked.pk).update(
            proposal_state=state.value, proposal_decided_by=user, proposal_decided_at=now
        )
        locked.proposal_state, locked.proposal_decided_by, locked.proposal_decided_at = (
            state.value,
            user,
            now,
        )
        emit_thread(locked)
    return locked


PROPOSAL_WITHDRAWN = "withdrawn by its reviewer"


def node_apply_proposal(
    *, node: ReviewNode, proposal: Proposal, user: Any, request: Any = None
) -> ReviewNode:
    """What a finding's reviewer proposed about it, accepted by `user` (proposal_decide audits
    the decision): a lower priority, a withdrawal (the ordinary dismissal, with its
    suppression hint) or a new suggested change. Each is audited as the node's own change, and
    the verdict follows a priority or status change."""

    refuse_duplicate(node)
    if proposal.kind is ProposalKind.WITHDRAW:
        return node_dismiss(node=node, user=user, reason=PROPOSAL_WITHDRAWN, request=request)
    with transaction.atomic():
        locked = node_locked(node)
        before = {"priority": locked.priority, "fix": locked.fix_prompt or locked.fix_diff}
        if proposal.kind is ProposalKind.LOWER_PRIORITY:
            problem = proposal_problem(proposal, current=Priority(locked.priority))
            if problem or proposal.priority is None:
                raise consensus.TransitionError(
                    problem, code=ErrorCode.PROPOSAL_REFUSED, http_status=409
                )
            locked.priority = proposal.priority.value
            locked.severity = severity_for_priority(proposal.priority).value
            fields = ["priority", "severity", "updated_at"]
            action, after = "node.priority_lowered", {"priority": locked.priority}
        else:
            text = redact_text(proposal.fix.strip())
            # A diff stays a diff; anything else is the instruction a coding agent follows. The
            # old exact lines go: they were the fix the reviewer no longer suggests.
            is_diff = text.startswith(("--- ", "diff ", "@@"))
            locked.fix_diff, locked.fix_prompt = (text, "") if is_diff else ("", text)
            locked.replacement_lines = None
            fields = ["fix_diff", "fix_prompt", "replacement_lines", "updated_at"]
            action, after = "node.fix_refined", {"fix": text[:2000]}
        locked.save(update_fields=fields)
        space = locked.space
        audit_record(
            action=action,
            actor=Actor.of(user),
            workspace=space.workspace,
            target=Target("reviewnode", str(locked.pk), f"{locked.priority} {locked.title}"),
            payload={
                "before": {k: v[:2000] for k, v in before.items() if k in after},
                "after": after,
                "reason": f"proposed by {locked.stream.name} in the finding's thread",
                "space": space.pk,
            },
            request=request,
        )
        emit(locked.space_id, "review.node_changed", node_id=locked.pk)
        if proposal.kind is ProposalKind.LOWER_PRIORITY:
            node_follow(
                locked,
                f"priority lowered from {before['priority']} on its reviewer's proposal",
                actor=user,
                request=request,
            )
    return locked
