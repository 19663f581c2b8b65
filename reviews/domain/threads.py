"""A review space's conversation: what a thread hangs on, what a message may say, who may
edit it and when, whom it mentions, and what a reviewer may propose about its own finding.

Every finding, disagreement and reviewer note of a space has one thread. A thread is named by
its subject, `node:<id>`, `disagreement:<id>` (the disagreement's key: its first canonical
finding) or `note:<stream id>:<index>`; the key is what the API, MCP and the page pass around.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from .types import Priority

BODY_MAX = 10_000
#: An author may correct a message for this long; after that it stands as written. An edit is
#: shown as one ("edited"), and the earlier text is kept.
EDIT_WINDOW = timedelta(minutes=15)
DEFAULT_HANDLE = "quorum"


class SubjectKind(StrEnum):
    NODE = "node"
    DISAGREEMENT = "disagreement"
    NOTE = "note"


class Source(StrEnum):
    """Who wrote a message: a person on the page or API, an outside agent (MCP), one of the
    round's reviewers answering, or someone on GitHub."""

    PERSON = "person"
    AGENT = "agent"
    REVIEWER = "reviewer"
    GITHUB = "github"


class ThreadError(ValueError):
    """A subject or body that cannot be used; the message says why, for the user."""


@dataclass(frozen=True, slots=True)
class Subject:
    kind: SubjectKind
    ids: tuple[int, ...]  # node: (node,), disagreement: (node,), note: (stream, index)

    @property
    def key(self) -> str:
        return ":".join([self.kind.value, *(str(i) for i in self.ids)])

    @property
    def node_id(self) -> int | None:
        return self.ids[0] if self.kind is not SubjectKind.NOTE else None

    @classmethod
    def node(cls, node_id: int) -> Subject:
        return cls(SubjectKind.NODE, (node_id,))

    @classmethod
    def parse(cls, key: str) -> Subject:
        """`node:12`, `disagreement:12` or `note:3:0`; anything else raises ThreadError."""
        kind_text, _, rest = (key or "").strip().partition(":")
        try:
            kind = SubjectKind(kind_text)
        except ValueError:
            raise ThreadError(
                f"Unknown thread {key!r}: use node:<id>, disagreement:<id> or note:<stream>:<n>."
            ) from None
        parts = rest.split(":") if rest else []
        want = 2 if kind is SubjectKind.NOTE else 1
        if len(parts) != want or not all(
            p.isascii() and p.isdigit() and len(p) < 12 for p in parts
        ):
            raise ThreadError(
                f"A {kind.value} thread is named {kind.value}:"
                + (":".join(["<stream>", "<n>"]) if want == 2 else "<id>")
                + f", not {key!r}."
            )
        return cls(kind, tuple(int(p) for p in parts))


def clean_body(body: str) -> str:
    """The message as stored: trimmed, not empty, at most BODY_MAX characters, no NUL."""
    text = (body or "").replace("\x00", "").strip()
    if not text:
        raise ThreadError("Write something: an empty message is not posted.")
    if len(text) > BODY_MAX:
        raise ThreadError(
            f"A message is at most {BODY_MAX:,} characters; this one has {len(text):,}."
        )
    return text


def edit_refusal(
    *, author_id: int | None, editor_id: int, created_at: datetime, now: datetime
) -> str:
    """Why `editor_id` may not edit the message now, or "" when they may."""
    if author_id is None or author_id != editor_id:
        return "Only its author may edit a message."
    if now - created_at > EDIT_WINDOW:
        minutes = int(EDIT_WINDOW.total_seconds() // 60)
        return f"A message may be edited for {minutes} minutes after it is posted; reply instead."
    return ""


_MENTION = re.compile(r"(?<![\w@.`])@([A-Za-z0-9][A-Za-z0-9._-]{0,62}[A-Za-z0-9]|[A-Za-z0-9])")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def mentions(body: str) -> tuple[str, ...]:
    """The handles a message mentions (`@name`), lower-cased, in order, once each; handles
    inside code spans and fences are code, not mentions, and e-mail addresses are not either."""
    text = _CODE.sub(" ", body or "")
    seen: dict[str, None] = {}
    for match in _MENTION.finditer(text):
        seen.setdefault(match.group(1).lower(), None)
    return tuple(seen)


def member_handles(*, username: str, email: str) -> tuple[str, ...]:
    """The handles that mention a member: their user name and the part of their address
    before the @."""
    local = (email or "").partition("@")[0]
    return tuple(dict.fromkeys(h.lower() for h in (username, local) if h))


def addresses(body: str, handle: str = DEFAULT_HANDLE) -> bool:
    """Does the message ask Quorum (`@quorum`, or the workspace's handle) something?"""
    return bool(handle) and handle.lower() in mentions(body)


class ProposalKind(StrEnum):
    """What a reviewer asked about its own finding may offer to change."""

    LOWER_PRIORITY = "lower_priority"
    WITHDRAW = "withdraw"
    REFINE_FIX = "refine_fix"


class ProposalState(StrEnum):
    OPEN = "open"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Proposal:
    kind: ProposalKind
    priority: Priority | None = None  # lower_priority: the new one
    fix: str = ""  # refine_fix: the new suggested change, as text


def proposal_problem(proposal: Proposal, *, current: Priority) -> str:
    """Why the proposal cannot apply to a finding at `current`, or ""."""
    if proposal.kind is ProposalKind.LOWER_PRIORITY:
        if proposal.priority is None:
            return "A proposal to lower the priority names the new priority."
        if proposal.priority.rank <= current.rank:
            return f"{proposal.priority.value} is not lower than {current.value}."
    if proposal.kind is ProposalKind.REFINE_FIX and not proposal.fix.strip():
        return "A proposal to refine the fix carries the new fix."
    return ""


def proposal_words(proposal: Proposal) -> str:
    if proposal.kind is ProposalKind.LOWER_PRIORITY and proposal.priority is not None:
        return f"lower the priority to {proposal.priority.value}"
    if proposal.kind is ProposalKind.WITHDRAW:
        return "withdraw the finding"
    return "replace the suggested fix"
