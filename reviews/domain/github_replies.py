"""Which finding a comment written on GitHub is about.

A reply in a review comment's conversation names its finding by the conversation's first
comment. A comment on the pull request's own conversation has no such link: it is about a
finding only when it links to one of Quorum's comments or quotes one (a `>` line that is part
of the comment's text); otherwise it is not stored in any thread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .threads import addresses

#: A quote shorter than this (after spacing is evened out) says too little to name a finding.
MIN_QUOTE = 12

_DISCUSSION = re.compile(r"#discussion_r(\d{1,19})\b")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Posted:
    """One of Quorum's inline comments on the pull request."""

    node_id: int
    comment_id: int
    body: str


def _even(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def quotes(body: str) -> list[str]:
    """The quoted passages of a markdown comment: runs of `>` lines, each as one text."""
    blocks: list[list[str]] = []
    inside = False
    for line in (body or "").splitlines():
        stripped = line.lstrip()
        if stripped.startswith(">"):
            text = stripped.lstrip(">").strip()
            if not inside:
                blocks.append([])
                inside = True
            blocks[-1].append(text)
        else:
            inside = False
    return [" ".join(b) for b in blocks if any(b)]


def linked_comments(body: str) -> list[int]:
    """Ids of review comments the text links to (`…/pull/7#discussion_r123`)."""
    return [int(m) for m in _DISCUSSION.findall(body or "")]


def finding_of(body: str, posted: Iterable[Posted]) -> int | None:
    """The finding a pull request comment is about: the one whose comment it links to, else
    the one whose text a quote of at least MIN_QUOTE characters comes from; None when it names
    none, or names several by quoting text they share."""
    comments = list(posted)
    by_id = {p.comment_id: p.node_id for p in comments}
    for linked in linked_comments(body):
        if linked in by_id:
            return by_id[linked]
    texts = [(p.node_id, _even(p.body)) for p in comments]
    for quote in quotes(body):
        wanted = _even(quote)
        if len(wanted) < MIN_QUOTE:
            continue
        nodes = {node for node, text in texts if wanted in text}
        if len(nodes) == 1:
            return nodes.pop()
    return None


def asks_quorum(body: str, handle: str) -> bool:
    """Does the comment itself address Quorum? A mention inside a quote (`> @quorum …`) is
    someone else's words, not a new question."""
    own = "\n".join(line for line in (body or "").splitlines() if not line.lstrip().startswith(">"))
    return addresses(own, handle)
