"""The domain's view of a stored finding (`node_view`): the one translation from a ReviewNode
row to reviews.domain.types.NodeView, shared by the review page, the exports, the API and
the agents' tools, so it lives apart from any one page's reads."""

from __future__ import annotations

from reviews.domain import types as t
from reviews.models import NodeConfirmation, ReviewNode


def node_view(node: ReviewNode, confirmations: list[NodeConfirmation] | None = None) -> t.NodeView:
    """The domain's view of a stored node. `confirmations` avoids a query when prefetched."""
    confirmed = confirmations if confirmations is not None else list(node.confirmations.all())
    flags = node.triage_flags or {}
    tags = node.tags
    return t.NodeView(
        id=str(node.pk),
        agent=node.stream.agent,
        stream=node.stream.name,
        type=t.NodeType(node.type),
        priority=t.Priority(node.priority),
        confidence=node.confidence,
        status=t.NodeStatus(node.status),
        category=t.Category(node.category),
        severity=t.Severity(node.severity),
        effort=t.Effort(node.effort),
        path=node.path or None,
        start_line=node.start_line,
        end_line=node.end_line,
        side=t.Side(node.side),
        title=node.title,
        body=node.body,
        replacement_lines=tuple(node.replacement_lines)
        if node.replacement_lines is not None
        else None,
        diff=node.fix_diff or None,
        fix_prompt=node.fix_prompt or None,
        map_anchor=node.map_anchor or None,
        duplicate_of=str(node.duplicate_of_id) if node.duplicate_of_id else None,
        folded_into=str(tags.folded_into) if tags.folded_into is not None else None,
        credited_agents=tuple(node.credited_agents or ()),
        confirmed_by=tuple(sorted({c.agent for c in confirmed if c.verdict == "real"})),
        exploitable_externally=flags.get("exploitable_externally", False),
        hot_path=flags.get("hot_path", False),
        critical_path=flags.get("critical_path", False),
        functional_effect=flags.get("functional_effect", True),
        defect_classes=tuple(tags.defect_classes) if tags.defect_classes is not None else None,
        analyzer_rule=tags.analyzer.rule if tags.analyzer else None,
        high_precision=bool(tags.analyzer and tags.analyzer.high_precision),
    )
