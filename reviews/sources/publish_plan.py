"""What a GitHub review will contain, decided before anything is sent.

Pure: nodes + verdict + the PR's current commentable lines in, a plan out. Inline only where
GitHub will accept the anchor; everything else folded into the body, so nothing is dropped.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from reviews.domain import consensus
from reviews.sources.diffs import LEFT, RIGHT, CommentableLines

FOOTER = "— Quorum AI review"
PUBLISHABLE_STATUSES = frozenset({"open", "consensus_ready"})
_PRIORITY_RANK = {"P0": 0, "P1": 1, "P2": 2, "P3": 3}
_EVENTS = {"Block": "REQUEST_CHANGES", "Hold": "COMMENT", "Ship": "APPROVE"}

Selection = Literal["all_open", "consensus"]


class FoldReason(enum.StrEnum):
    UNANCHORED = "unanchored"
    NOT_IN_DIFF = "anchor_not_in_diff"  # line gone, outside a hunk, or spanning hunks
    REJECTED = "rejected_by_github"  # fallback after a 422 (fold_everything)


class SkipReason(enum.StrEnum):
    RESOLVED = "resolved"
    DISMISSED = "dismissed"
    UNCONFIRMED = "unconfirmed"
    UNKNOWN_STATUS = "unknown_status"


@dataclass(frozen=True)
class NodeRecord:
    id: int | str
    status: str  # open | consensus_ready | resolved | dismissed
    title: str
    body: str = ""
    priority: str = "P2"
    type: str = "suggestion"
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    side: str = RIGHT
    replacement_lines: Sequence[str] | None = None
    confirmed_by_peer: bool = False
    reviewers: Sequence[str] = ()
    # When known, the publisher re-checks peer confirmation itself: a confirmation by the author
    # is no confirmation, whatever the status says.
    author: str | None = None
    confirmed_by: Sequence[str] = ()


@dataclass(frozen=True)
class InlineComment:
    node_id: int | str
    path: str
    line: int
    side: str
    start_line: int | None
    start_side: str | None
    body: str
    folded_text: str = field(repr=False)  # this node as a body item, for fold_everything
    rank: int = 0

    def to_api(self) -> dict[str, Any]:
        comment: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "side": self.side,
            "body": self.body,
        }
        if self.start_line is not None:
            comment["start_line"] = self.start_line
            comment["start_side"] = self.start_side
        return comment


@dataclass(frozen=True)
class FoldedNode:
    node_id: int | str
    reason: FoldReason
    text: str
    rank: int = 0


@dataclass(frozen=True)
class SkippedNode:
    node_id: int | str
    reason: SkipReason


@dataclass(frozen=True)
class PublishPlan:
    verdict: str
    event: str
    body: str
    comments: tuple[InlineComment, ...]
    folded: tuple[FoldedNode, ...]
    skipped: tuple[SkippedNode, ...]
    rule: str = ""  # what decided the verdict, said in the body

    @property
    def inline_ids(self) -> list[int | str]:
        return [c.node_id for c in self.comments]

    @property
    def folded_ids(self) -> list[int | str]:
        return [f.node_id for f in self.folded]

    @property
    def skipped_ids(self) -> list[int | str]:
        return [s.node_id for s in self.skipped]

    def api_comments(self) -> list[dict[str, Any]]:
        return [c.to_api() for c in self.comments]


def plan_document(plan: PublishPlan) -> dict[str, Any]:
    """Exactly what GitHub receives: the event, the body and each inline comment (every key
    present, so the document survives validation unchanged and hashes the same)."""
    comments = [{"start_line": None, "start_side": None, **c} for c in plan.api_comments()]
    return {"event": plan.event, "body": plan.body, "comments": comments}


def document_digest(document: dict[str, Any]) -> str:
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def plan_digest(plan: PublishPlan) -> str:
    """The digest an approval binds: any change to what would be posted changes it."""
    return document_digest(plan_document(plan))


def review_event(verdict: str, *, approve_on_ship: bool) -> str:
    """Block → REQUEST_CHANGES, Hold → COMMENT, Ship → APPROVE only when asked, else COMMENT."""
    if verdict not in _EVENTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    if verdict == "Ship" and not approve_on_ship:
        return "COMMENT"
    return _EVENTS[verdict]


def build_publish_plan(
    *,
    nodes: Iterable[NodeRecord],
    verdict: str,
    selection: Selection,
    approve_on_ship: bool,
    commentable: CommentableLines,
    rule: str = "",
) -> PublishPlan:
    if selection not in ("all_open", "consensus"):
        raise ValueError(f"unknown selection {selection!r}")
    event = review_event(verdict, approve_on_ship=approve_on_ship)
    comments: list[InlineComment] = []
    folded: list[FoldedNode] = []
    skipped: list[SkippedNode] = []
    for rank, node in enumerate(sorted(nodes, key=_order)):
        skip = _skip_reason(node, selection)
        if skip is not None:
            skipped.append(SkippedNode(node.id, skip))
            continue
        anchor = _anchor(node)
        if anchor is None:
            folded.append(FoldedNode(node.id, FoldReason.UNANCHORED, _folded_text(node), rank))
            continue
        path, start, end, side = anchor
        if commentable.same_hunk(path, start, end, side) is None:
            folded.append(FoldedNode(node.id, FoldReason.NOT_IN_DIFF, _folded_text(node), rank))
            continue
        comments.append(
            InlineComment(
                node_id=node.id,
                path=path,
                line=end,
                side=side,
                start_line=start if start < end else None,
                start_side=side if start < end else None,
                body=_comment_body(node, start, end, side),
                folded_text=_folded_text(node),
                rank=rank,
            )
        )
    body = _review_body(verdict, len(comments), folded, rule=rule)
    return PublishPlan(
        verdict, event, body, tuple(comments), tuple(folded), tuple(skipped), rule=rule
    )


def fold_everything(plan: PublishPlan) -> PublishPlan:
    """The same review with every inline comment moved into the body (after GitHub's 422)."""
    moved = [
        FoldedNode(c.node_id, FoldReason.REJECTED, c.folded_text, c.rank) for c in plan.comments
    ]
    folded = tuple(sorted([*plan.folded, *moved], key=lambda f: f.rank))
    body = _review_body(plan.verdict, 0, folded, rule=plan.rule)
    return replace(plan, comments=(), folded=folded, body=body)


# -- selection and anchors -------------------------------------------------------------------


def _order(node: NodeRecord) -> tuple[int, str, int, str]:
    return (
        _PRIORITY_RANK.get(node.priority, len(_PRIORITY_RANK)),
        node.path or "\uffff",  # unanchored last within a priority
        node.start_line or 0,
        str(node.id),
    )


def _skip_reason(node: NodeRecord, selection: Selection) -> SkipReason | None:
    if node.status == "resolved":
        return SkipReason.RESOLVED
    if node.status == "dismissed":
        return SkipReason.DISMISSED
    if node.status not in PUBLISHABLE_STATUSES:
        return SkipReason.UNKNOWN_STATUS
    if selection == "consensus" and not _peer_confirmed(node):
        return SkipReason.UNCONFIRMED
    return None


def _peer_confirmed(node: NodeRecord) -> bool:
    if node.author is not None and node.confirmed_by:
        # Peers are people: the author's own agents and person do not count.
        return any(
            consensus.is_peer(author_agent=node.author, confirmer_agent=who)
            for who in node.confirmed_by
        )
    return node.status == "consensus_ready" or node.confirmed_by_peer


def _anchor(node: NodeRecord) -> tuple[str, int, int, str] | None:
    """(path, start, end, side), or None when the node points at no line at all."""
    if not node.path:
        return None
    start = node.start_line if node.start_line is not None else node.end_line
    end = node.end_line if node.end_line is not None else start
    if start is None or end is None:
        return None
    # An impossible range or side can never be commentable; same_hunk will refuse it and the
    # node is folded with its location shown.
    return node.path, start, end, node.side


# -- rendering -------------------------------------------------------------------------------


def _heading(node: NodeRecord) -> str:
    return f"**[{node.priority}] {node.type}: {_one_line(node.title)}**"


def _location(node: NodeRecord) -> str:
    if not node.path:
        return ""
    start = node.start_line if node.start_line is not None else node.end_line
    end = node.end_line if node.end_line is not None else start
    if start is None:
        return f"`{node.path}`"
    where = f"{start}" if end in (None, start) else f"{start}-{end}"
    side = " (old side)" if node.side == LEFT else ""
    return f"`{node.path}:{where}`{side}"


def _reviewers(node: NodeRecord) -> str:
    return f"_Reviewers: {', '.join(node.reviewers)}_" if node.reviewers else ""


def _comment_body(node: NodeRecord, start: int, end: int, side: str) -> str:
    parts = [_heading(node), _balanced(node.body.strip())]
    # A suggestion replaces exactly start..end on the new side; offer one only when the node's
    # replacement is for exactly the lines this comment spans (GitHub suggestions).
    if (
        node.replacement_lines is not None
        and side == RIGHT
        and (node.start_line or node.end_line, node.end_line or node.start_line) == (start, end)
    ):
        parts.append(_fenced(node.replacement_lines, "suggestion"))
    parts += [_reviewers(node), FOOTER]
    return "\n\n".join(p for p in parts if p)


def _folded_text(node: NodeRecord) -> str:
    location = _location(node)
    head = f"{_heading(node)} — {location}" if location else _heading(node)
    parts = [head, _balanced(node.body.strip())]
    if node.replacement_lines is not None:
        parts.append("Suggested replacement:\n\n" + _fenced(node.replacement_lines, ""))
    parts += [_reviewers(node), FOOTER]
    return "\n\n".join(p for p in parts if p)


def _review_body(
    verdict: str, inline_count: int, folded: Sequence[FoldedNode], rule: str = ""
) -> str:
    total = inline_count + len(folded)
    lines = [f"## Quorum review: {verdict}", ""]
    if rule.strip():
        lines += [f"**Why {verdict}:** {_one_line(rule)}", ""]
    if total == 0:
        lines.append("No open findings to report.")
    else:
        noun = "finding" if total == 1 else "findings"
        lines.append(f"{total} {noun}: {inline_count} inline, {len(folded)} in this review.")
    if folded:
        lines += ["", "### Findings in this review", ""]
        lines.append("\n\n---\n\n".join(item.text for item in folded))
    lines += ["", FOOTER]
    return "\n".join(lines)


def _fenced(lines: Sequence[str], info: str) -> str:
    text = "\n".join(line.rstrip("\r\n") for line in lines)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}" if lines else f"{fence}{info}\n{fence}"


def _balanced(markdown: str) -> str:
    # An unclosed code fence in one finding would swallow the rest of the review body.
    fences = re.findall(r"^ {0,3}(`{3,}|~{3,})", markdown, flags=re.MULTILINE)
    if len(fences) % 2:
        return f"{markdown}\n{fences[-1]}"
    return markdown


def _one_line(text: str) -> str:
    return " ".join(text.split())
