"""`{% ask_panel node membership as ask %}`: what a finding's thread shows about asking its
reviewer, and `proposal_words` for a reviewer's proposal. Streams and the space's open
questions are read once per request, however many findings it shows."""

from __future__ import annotations

from typing import Any

from django import template

from reviews.domain.threads import Subject
from reviews.domain.threads import proposal_words as words
from reviews.models import ReviewNode, ThreadMessage
from reviews.services import asking, threads
from workspaces.permissions import allows
from workspaces.rules import Perm

register = template.Library()


@register.simple_tag(takes_context=True)
def ask_panel(
    context: template.Context, node: Any, membership: Any, key: str = ""
) -> asking.AskPanel | None:
    """None unless the thread (`key`, when given) is the finding's own: a disagreement's or a
    note's thread has no one to ask."""
    if not isinstance(node, ReviewNode) or (key and key != Subject.node(node.pk).key):
        return None
    # Each include renders with its own render context: the page's cache lives on the request,
    # or on the page a live update renders without one.
    holder = context.get("request") or context.get("page")
    cache: dict[int, Any] = getattr(holder, "_quorum_ask_panels", {}) if holder else {}
    if holder is not None:
        holder._quorum_ask_panels = cache
    if node.space_id not in cache:
        shown = context.get("threads")
        workspace = context.get("workspace")
        cache[node.space_id] = (
            {},
            asking.workspace_configs(workspace.pk) if workspace is not None else None,
            workspace,
            # The page's threads hold its questions; a lone card reads the space's.
            None if isinstance(shown, dict) else asking.space_questions(node.space_id),
        )
    abilities, configs, workspace, questions = cache[node.space_id]
    if questions is None:
        waiting, failed = asking.thread_questions(
            context["threads"].get(Subject.node(node.pk).key, [])
        )
        questions = ({node.pk} if waiting else set(), {node.pk: failed} if failed else {})
    return asking.ask_panel(
        node,
        may_ask=membership is not None and allows(membership, Perm.DISCUSS),
        abilities=abilities,
        questions=questions,
        configs=configs,
        workspace=workspace,
    )


@register.filter
def proposal_words(message: Any) -> str:
    proposal = threads.message_proposal(message)
    return words(proposal) if proposal is not None else ""


@register.filter
def may_triage(membership: Any) -> bool:
    return membership is not None and allows(membership, Perm.TRIAGE_NODES)


@register.filter
def node_thread_key(node: Any) -> str:
    return Subject.node(node.pk).key


@register.simple_tag
def first_message(*candidates: Any) -> ThreadMessage | None:
    """The first of the names given that holds a message (`message`, or a thread loop's `m`)."""
    return next((c for c in candidates if isinstance(c, ThreadMessage)), None)
