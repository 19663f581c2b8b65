"""Review mode: the only tools a reviewer agent may call, and what it is told otherwise.

Reviewers run read-only with an allowlist of tools for findings, comments,
tickets and peer confirmation; "a disallowed call gets the mode's refusal message telling the
agent to finish the review and leave action to people". The counter feeds the round's statistics,
so a model that keeps reaching for a shell is visible to the people who configured it.
"""

from __future__ import annotations

import threading
from collections import Counter

#: Tools that record review output. They write only into the reviewer's own stream
#: (docs/domain-rules.md#review-spaces-and-streams).
FINDING_TOOLS = frozenset(
    {"add_review_node", "confirm_review_node", "list_review_nodes", "add_note"}
)
#: Read-only code tools over the space's worktree (`reviews.agents.codetools`): `read` is a
#: file, a directory's files or a search.
CODE_TOOLS = frozenset({"read", "get_diff"})
ALLOWED_TOOLS = FINDING_TOOLS | CODE_TOOLS

_REFUSAL = (
    "Refused: `{tool}` is not available. This is review mode: you may read the code "
    "(read, get_diff) and record findings, notes (comments, tickets) and "
    "peer confirmations, nothing else - no shell, no writes, no network, no merges or deploys. "
    "Finish the review with the tools you have and leave any action to people."
)


def refusal_message(tool: str) -> str:
    """What a reviewer is told when it calls `tool`, which is not in the allowlist."""
    # The name comes from the model; keep it short and on one line so it cannot reshape the
    # message it is quoted in.
    shown = "".join(ch for ch in tool if ch.isprintable() and ch not in "`\n")[:64] or "?"
    return _REFUSAL.format(tool=shown)


class ReviewMode:
    """The allowlist plus a thread-safe count of refused calls, one instance per reviewer run."""

    def __init__(self, allowed: frozenset[str] = ALLOWED_TOOLS) -> None:
        unknown = allowed - ALLOWED_TOOLS
        if unknown:
            # A narrower mode is fine (a verifier lens may get no finding tools); a wider one
            # would quietly turn review mode into something else.
            raise ValueError(f"not review-mode tools: {sorted(unknown)}")
        self.allowed = allowed
        self._refused: Counter[str] = Counter()
        self._lock = threading.Lock()

    def allows(self, tool: str) -> bool:
        return tool in self.allowed

    def refuse(self, tool: str) -> str:
        """Count one refused call of `tool` and return the message the agent receives."""
        with self._lock:
            self._refused[tool] += 1
        return refusal_message(tool)

    @property
    def refused_calls(self) -> int:
        with self._lock:
            return sum(self._refused.values())

    @property
    def refused_by_tool(self) -> dict[str, int]:
        with self._lock:
            return dict(self._refused)
