"""Persistence of review spaces, rounds, streams, nodes, axes and verdicts.

The rules live in reviews/domain. Each state and status column has one writer, a function
that applies its transition table (tests/test_single_writers.py lists them and checks that
nothing else writes one); a pipeline step's state is written by the pipeline runner.

The rows are grouped by what they serve (rounds, findings, publishing, spend, threads);
Django and the rest of the code import them from here.
"""

from __future__ import annotations

from reviews.models.findings import (
    AxisResult,
    CohortProgress,
    FileViewed,
    MemoryFact,
    NodeConfirmation,
    ReviewNode,
    SarifUpload,
    Verdict,
    VerdictChange,
)
from reviews.models.publishing import PublishedComment, PublishRecord, ReviewerTicket
from reviews.models.rounds import (
    CodeIndexRecord,
    PipelineStep,
    PipelineSweep,
    PullRequest,
    ReviewerStream,
    ReviewRound,
    ReviewSpace,
    WebhookDelivery,
)
from reviews.models.spend import ModelCall, ModelPrice
from reviews.models.threads import ThreadMessage, ThreadMessageRevision

__all__ = [
    "AxisResult",
    "CodeIndexRecord",
    "CohortProgress",
    "FileViewed",
    "MemoryFact",
    "ModelCall",
    "ModelPrice",
    "NodeConfirmation",
    "PipelineStep",
    "PipelineSweep",
    "PublishRecord",
    "PublishedComment",
    "PullRequest",
    "ReviewNode",
    "ReviewRound",
    "ReviewSpace",
    "ReviewerStream",
    "ReviewerTicket",
    "SarifUpload",
    "ThreadMessage",
    "ThreadMessageRevision",
    "Verdict",
    "VerdictChange",
    "WebhookDelivery",
]
