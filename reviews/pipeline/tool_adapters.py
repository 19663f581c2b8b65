"""The tools a model reviewer calls during its run, bound to its stream: record findings,
leave a comment or a ticket, read the code.

Opinions are independent (docs/domain-rules.md#review-mode-and-untrusted-input): a reviewer is
offered no list and no confirm tool (its own findings it may not confirm, and its peers' it
does not see), so a confirmation is always a second opinion: the panel lenses', which see the
findings they judge.

Every reviewer of a round, the critic's follow-up included, is offered the same tools, so their
requests share one prefix: no get_diff when the whole diff is in the prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from reviews.agents.codetools import CodeTools
from reviews.agents.model_run_types import ReviewTools
from reviews.domain.redaction import redact_text
from reviews.models import ReviewerStream
from reviews.pipeline.faults import CONNECTION_ERRORS, retry_db
from reviews.pipeline.inputs import file_text, line_counter
from reviews.pipeline.model_waits import release_connection
from reviews.services.node_recording import node_record
from reviews.services.notes import note_record
from reviews.sources.diffs import ChangedFile


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

    def durable(call: Callable[[], Any], what: str) -> Any:
        try:
            return retry_db(call, what=f"{stream.name}: {what}")
        except CONNECTION_ERRORS as exc:
            lost.append(exc)
            raise
        finally:
            release_connection()  # the tool's thread goes back to waiting on the model

    def add_review_node(payload: dict) -> str:
        result = durable(
            # The run's end counts its findings (stream_transition): one statement each here.
            lambda: node_record(
                stream=stream,
                payload=payload,
                file_lines=counter,
                file_text=text,
                counted_at_end=True,
            ),
            "add_review_node",
        )
        if result.node is None:
            why = result.rejection
            return f"Rejected, no finding was recorded: {why}. Correct the payload and call again."
        return f"Recorded finding {result.node.pk}."

    def _note(kind: str, **fields: Any) -> str:
        # Comments and tickets are shown and published like findings: redacted the same way.
        fields = {k: redact_text(v) if isinstance(v, str) else v for k, v in fields.items()}
        # Recorded once even when a retry writes it again; a ticket becomes a row people decide.
        durable(lambda: note_record(stream=stream, kind=kind, fields=fields), kind)
        return f"{kind.capitalize()} noted for the people reading this review."

    return ReviewTools(
        # A reviewer knows its own findings from its tool results, and sees no one else's.
        add_review_node=add_review_node,
        add_comment=lambda body, path=None, line=None: _note(
            "comment", body=body, path=path, line=line
        ),
        create_ticket=lambda title, body: _note("ticket", title=title, body=body),
        code=CodeTools(root, changed_files=files),
        diff_tool=not whole_diff,
    )
