"""The tools a model reviewer calls during its run, bound to its stream: record, confirm and
list findings, leave a comment or a ticket, read the code.

First opinions are independent (docs/domain-rules.md#review-mode-and-untrusted-input): in the
reviewer stage a reviewer is offered no list and no confirm tool (its own findings it may not
confirm, and its peers' it does not see), so a confirmation is always a second opinion — the
panel lenses, which see the finding they judge, or the follow-up reviewer, which runs after the
first pass and lists every finding.

Every first-pass reviewer of a round is offered the same tools, so their requests share one
prefix: no get_diff when the whole diff is in the prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reviews.agents.codetools import CodeTools
from reviews.agents.redaction import redact_text
from reviews.agents.runtime import ReviewTools
from reviews.domain.consensus import ConsensusError
from reviews.models import ReviewerStream, ReviewNode
from reviews.pipeline.faults import CONNECTION_ERRORS, retry_db
from reviews.pipeline.inputs import file_text, line_counter
from reviews.services.nodes import node_confirm, node_record
from reviews.services.notes import note_record
from reviews.sources.diffs import ChangedFile

FOLLOW_UP_PREFIX = "followup-"  # the critic's follow-up stream (reviews/pipeline/stage_critic.py)


def review_tools(
    stream: ReviewerStream,
    root: Path,
    files: list[ChangedFile],
    lost: list[BaseException],
    *,
    whole_diff: bool = False,
) -> ReviewTools:
    """The reviewer's tools. Their writes survive a database blip (reconnect, write again); if
    the database stays away, the error is kept in `lost` and the run is void: the model would
    otherwise be told "tool failed, continue" and the finding would silently be missing."""
    counter, text = line_counter(root), file_text(root)
    first_pass = not stream.name.startswith(FOLLOW_UP_PREFIX)

    def durable(call: Callable[[], Any], what: str) -> Any:
        try:
            return retry_db(call, what=f"{stream.name}: {what}")
        except CONNECTION_ERRORS as exc:
            lost.append(exc)
            raise

    def add_review_node(payload: dict) -> str:
        result = durable(
            lambda: node_record(stream=stream, payload=payload, file_lines=counter, file_text=text),
            "add_review_node",
        )
        if result.node is None:
            why = result.rejection
            return f"Rejected, no finding was recorded: {why}. Correct the payload and call again."
        return f"Recorded finding {result.node.pk}."

    def confirm_review_node(node_id: str, reasoning: str | None = None) -> str:
        def confirm() -> str:
            node = ReviewNode.objects.filter(
                round=stream.round, pk=int(node_id) if str(node_id).isdigit() else -1
            ).first()
            if node is None:
                return f"There is no finding {node_id} in this review."
            try:
                node_confirm(node=node, by_agent=stream.agent, reason=redact_text(reasoning or ""))
            except ConsensusError as exc:
                return f"Refused: {exc}"
            return f"Confirmed finding {node.pk}."

        return durable(confirm, "confirm_review_node")

    def list_review_nodes() -> str:
        rows = durable(
            lambda: list(
                ReviewNode.objects.filter(round=stream.round)
                .select_related("stream")
                .order_by("id")
            ),
            "list_review_nodes",
        )
        return json.dumps(
            [
                {
                    "id": n.pk,
                    "reviewer": n.stream.agent,
                    "priority": n.priority,
                    "title": n.title,
                    "where": f"{n.path}:{n.start_line}" if n.path else "",
                    "status": n.status,
                }
                for n in rows
            ]
        )

    def _note(kind: str, **fields: Any) -> str:
        # Comments and tickets are shown and published like findings: redacted the same way.
        fields = {k: redact_text(v) if isinstance(v, str) else v for k, v in fields.items()}
        # Recorded once even when a retry writes it again; a ticket becomes a row people decide.
        durable(lambda: note_record(stream=stream, kind=kind, fields=fields), kind)
        return f"{kind.capitalize()} noted for the people reading this review."

    return ReviewTools(
        add_review_node=add_review_node,
        confirm_review_node=None if first_pass else confirm_review_node,
        # A first pass knows its own findings from its tool results, and sees no one else's.
        list_review_nodes=None if first_pass else list_review_nodes,
        add_comment=lambda body, path=None, line=None: _note(
            "comment", body=body, path=path, line=line
        ),
        create_ticket=lambda title, body: _note("ticket", title=title, body=body),
        code=CodeTools(root, changed_files=files),
        diff_tool=not (first_pass and whole_diff),
    )
