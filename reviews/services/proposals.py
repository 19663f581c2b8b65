"""A reviewer's proposal about its own finding, decided by a person in the finding's thread.

Apart from the threads service because accepting one changes the finding through the node
service, which itself posts into threads (a folded finding's words).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from guardrails.audit import Actor, Target, audit_record
from reviews.domain import threads as rules
from reviews.models import ThreadMessage
from reviews.services.nodes import node_apply_proposal
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
