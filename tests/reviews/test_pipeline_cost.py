"""What a round costs the database: a reviewer's findings are written in a few statements, the
lead pass and the finaliser load what they need once, so the queries of a whole thorough round
on the sample repository stay within a bound per finding (tests/bench/bench_pipeline.py
measures the same on the embedded default)."""

from __future__ import annotations

import threading

import pytest
from django.db import connections
from django.db.backends.signals import connection_created
from django.db.models import Count

from reviews.models import ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# Measured on PostgreSQL: 59.1 per finding (532 queries) before the writes were batched, 35.6
# (320) after, 25.3 (228) once the bookkeeping was cut (streams created in one insert, a step's
# outcome in one statement, the coordinator's reads merged, no reset before a first attempt, the
# finaliser reading the cohorts prepare stored), 19.6 (176) once the panel judged findings in
# groups (one step for the round's 8 instead of one each, a group's writes in a few statements)
# and a reviewer stopped counting the round's streams. The bound leaves a little room, not
# enough for the panel to go back to a step per finding (about five more per finding).
# The spend ledger then adds one insert per agent run (a group's lenses together) and one sum at
# finalise: 21.6 (194). Then 15.8 (142): run_inline claims and reads a batch of steps in two
# statements, a reviewer's findings are one insert each (its run's end counts them), the
# finaliser's axes go in one upsert, a round's transition neither locks its space twice nor
# adds savepoints inside the finaliser's transaction, and the stages write and read less.
# Then 12.0 (108): the budgets read the ledger once per decision, reviewers claimed together
# are started in one statement and read their settings once, the stages of one coordinator
# move share their reads of the findings and streams, and an inline stage's stats go with the
# statement that records it done (the finaliser's with the one that finishes the round).
# Then 7.7 (69): a move reads the ledger with the round; a round's move locks its space and
# reads its status's facts in one statement; a fan-out stage's steps are created (one upsert)
# before the statement that enters it, which lets go of the lease, as the finaliser's does;
# run_inline records a batch's step outcomes and its reviewers' spend together; new indexes go
# in one insert; the finaliser decides the first verdict from the axes it wrote and flags from
# the space it locked; the panel's lock read says whether a verdict follows.
MAX_QUERIES_PER_FINDING = 8


class Queries:
    """Counts the statements of every connection, whichever thread (a reviewer's, a lens's)
    opened it."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> Queries:
        connection_created.connect(self._attach)
        for connection in connections.all(initialized_only=True):
            self._attach(None, connection)
        return self

    def __exit__(self, *exc: object) -> None:
        connection_created.disconnect(self._attach)
        for connection in connections.all(initialized_only=True):
            if self._wrap in connection.execute_wrappers:
                connection.execute_wrappers.remove(self._wrap)

    def _attach(self, sender, connection, **kwargs) -> None:
        if self._wrap not in connection.execute_wrappers:
            connection.execute_wrappers.append(self._wrap)

    def _wrap(self, execute, sql, params, many, context):
        # The process's watch for ended rounds (reviews/pipeline/model_waits.py) asks once a
        # second for all the rounds it runs: a cost per process and second, not per finding.
        if threading.current_thread().name != "round-stops":
            with self._lock:
                self.count += 1
        return execute(sql, params, many, context)


def test_a_thorough_round_costs_a_bounded_number_of_queries_per_finding(
    settings, tmp_path, workspace, fake_model, alice
):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model)
    base, head = create_sample_repository(tmp_path / "shop")
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str((tmp_path / "shop").resolve())
    )
    review_round = review_request(
        repository=repository, actor=alice, base=base, head=head, tier="thorough", queue=False
    )
    with Queries() as queries:
        review_round = run_inline(review_round.pk)
    assert review_round.state == "finished", review_round.error
    findings = ReviewNode.objects.filter(round=review_round).count()
    # The round did its work: every model reviewer, the analyzers and the panel wrote findings.
    assert findings >= 8
    assert ReviewNode.objects.filter(round=review_round, tags__panel="confirmed").exists()
    # A reviewer's findings are counted when its run ends, not one update each: the count the
    # page shows for each reviewer is still its findings.
    streams = review_round.streams.exclude(kind="verifier").annotate(found=Count("nodes"))
    assert [(s.name, s.accepted) for s in streams] == [(s.name, s.found) for s in streams]
    assert sum(s.accepted for s in streams) == findings
    per_finding = queries.count / findings
    assert per_finding <= MAX_QUERIES_PER_FINDING, (
        f"{queries.count} queries for {findings} findings = {per_finding:.1f} per finding"
    )
