"""SARIF in and out, end to end: the sample repository reviewed offline (real bandit and ruff),
then ruff's own SARIF output for the same head uploaded by a CI token through the API.

What a team sees: the uploaded tool is a reviewer stream; its SQL finding merges with
Quorum's own (bandit's B608) by the dedup rule instead of showing twice; results outside the
change are counted, not shown; an invalid log is a 400 naming the schema error and changes
nothing; the same log twice adds nothing; the export (API, page, CLI) is valid SARIF 2.1.0
against the vendored schema.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from guardrails.models import AuditEvent
from reviews import sarif as sarif_schema
from reviews.domain.sarif import FINGERPRINT_KEY
from reviews.models import ReviewerStream, ReviewNode, Verdict, VerdictChange
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.reviews.sarif_uploads import upload_and_wait
from workspaces.models import Repository
from workspaces.services import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _embedded_background(settings):
    settings.REDIS_URL = ""  # uploads are recorded by a server thread, as in the embedded default


# Ruff's port of bandit's SQL rule, a shell rule, and the docstring rule: it fires on functions
# the change adds and on functions that were already there (outside the change).
RUFF_RULES = "S608,S602,D103"


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


def ruff_sarif(repo: Path, checkout: Path) -> dict:
    """What a CI job's `ruff check --output-format sarif` writes for the head commit."""
    subprocess.run(["git", "clone", "-q", str(repo), str(checkout)], check=True)
    _git(checkout, "checkout", "-q", "feature/search")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--no-cache",
            "--select",
            RUFF_RULES,
            "--output-format",
            "sarif",
            ".",
        ],
        cwd=checkout,
        capture_output=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def reviewed(settings, tmp_path, workspace, alice):
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repo = tmp_path / "shop"
    base, head = create_sample_repository(repo)
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo.resolve())
    )
    review_round = review_request(
        repository=repository, actor=alice, base=base, head=head, tier="light", queue=False
    )
    review_round = run_inline(review_round.pk)
    assert review_round.state == "finished", review_round.error
    return review_round, ruff_sarif(repo, tmp_path / "ci-checkout")


@pytest.fixture
def ci(workspace, member_factory):
    bot = member_factory(workspace, "reviewer", "ci-bot@example.com")
    _, secret = api_token_create(user=bot, name="ci")
    return Client(headers={"Authorization": f"Bearer {secret}"})


def _upload_url(workspace, review_round) -> str:
    return (
        f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}"
        f"/rounds/{review_round.number}/sarif"
    )


def _state(review_round) -> tuple:
    return (
        sorted(
            ReviewNode.objects.filter(round=review_round).values_list(
                "pk", "stream__name", "priority", "status", "duplicate_of_id"
            )
        ),
        sorted(ReviewerStream.objects.filter(round=review_round).values_list("name", "accepted")),
        VerdictChange.objects.filter(round=review_round).count(),
    )


def test_ruffs_sarif_merges_with_quorums_findings_and_is_idempotent(reviewed, workspace, ci):
    review_round, log = reviewed
    assert sarif_schema.schema_error(log) is None  # the real tool's log is valid as written
    bandit_sql = ReviewNode.objects.get(round=review_round, title__startswith="B608")
    nodes_before = ReviewNode.objects.filter(round=review_round).count()

    outcome = upload_and_wait(ci, _upload_url(workspace, review_round), log)

    assert outcome["state"] == "done", outcome
    (run,) = outcome["runs"]
    # Quorum's own ruff reviewer is the stream "ruff": the upload gets a stream of its own.
    assert (run["tool"], run["stream"]) == ("ruff", "ruff (SARIF)")
    assert run["added"] == run["findings"] > 0 and run["rejected"] == 0
    assert run["on_change"] >= run["findings"]  # one finding per rule per file
    # connect(), order_total() and total_view() were there before the change: counted only.
    assert run["outside"] >= 3
    stream = ReviewerStream.objects.get(round=review_round, name=run["stream"])
    assert (stream.kind, stream.agent, stream.state) == ("analyzer", "sarif:ruff", "done")
    assert f"{run['outside']} outside the change (counted, not shown)" in stream.coverage_note
    assert ReviewNode.objects.filter(round=review_round).count() == nodes_before + run["added"]
    shown_paths = set(ReviewNode.objects.filter(stream=stream).values_list("path", flat=True))
    assert "shop/db.py" not in shown_paths and "shop/orders.py" not in shown_paths

    # The dedup rule: ruff's S608 and bandit's B608 are one SQL injection at the same lines.
    ruff_sql = ReviewNode.objects.get(stream=stream, title__startswith="S608")
    bandit_sql.refresh_from_db()
    assert ruff_sql.category == "security" and ruff_sql.priority in ("P0", "P1")
    pair = {ruff_sql.duplicate_of_id, bandit_sql.duplicate_of_id}
    assert pair in ({bandit_sql.pk, None}, {ruff_sql.pk, None}), pair
    canonical = bandit_sql if ruff_sql.duplicate_of_id == bandit_sql.pk else ruff_sql
    other_agent = "sarif:ruff" if canonical is bandit_sql else "bandit"
    assert other_agent in canonical.credited_agents
    # The verdict was decided again (here it stays Block: the committed live key).
    assert outcome["verdict"] == Verdict.objects.get(round=review_round).level
    assert AuditEvent.objects.filter(action="sarif.uploaded").count() == 1

    # The same log again adds nothing.
    before = _state(review_round)
    again = upload_and_wait(ci, _upload_url(workspace, review_round), log)
    (rerun,) = again["runs"]
    assert rerun["added"] == 0 and rerun["already"] == run["findings"]
    assert _state(review_round) == before

    # The export: valid SARIF 2.1.0, one result per canonical finding, fingerprinted.
    sarif_url = f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}/sarif"
    exported = ci.get(sarif_url)
    assert exported.status_code == 200, exported.content
    document = exported.json()
    assert sarif_schema.schema_error(document) is None
    results = document["runs"][0]["results"]
    canonical_count = ReviewNode.objects.filter(
        round=review_round, duplicate_of__isnull=True
    ).count()
    assert len(results) == canonical_count
    sql = [r for r in results if r["ruleId"] in ("B608", "S608")]
    assert len(sql) == 1  # merged: one result, not two
    assert sql[0]["partialFingerprints"][FINGERPRINT_KEY] == canonical.fingerprint
    assert sql[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "shop/search.py"
    )


def test_an_invalid_log_is_a_400_with_the_schema_error_and_changes_nothing(
    reviewed, workspace, ci, member_factory
):
    review_round, log = reviewed
    before = _state(review_round)
    audit_before = AuditEvent.objects.count()
    bad = copy.deepcopy(log)
    bad["runs"][0]["results"][0]["level"] = "fatal"

    response = ci.post(_upload_url(workspace, review_round), bad, content_type="application/json")

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "sarif_invalid"
    assert body["path"] == "$.runs[0].results[0].level"
    assert "'fatal' is not one of" in body["schema_error"]
    assert body["loc"] == ["runs", 0, "results", 0, "level"]
    assert "Nothing was recorded" in body["detail"]
    assert _state(review_round) == before
    assert AuditEvent.objects.count() == audit_before
    assert not ReviewerStream.objects.filter(
        round=review_round, agent__startswith="sarif:"
    ).exists()

    # A viewer may not upload; a round that does not exist is a 404.
    viewer = member_factory(workspace, "viewer", "viewer@example.com")
    _, secret = api_token_create(user=viewer, name="v")
    as_viewer = Client(headers={"Authorization": f"Bearer {secret}"})
    refused = as_viewer.post(
        _upload_url(workspace, review_round), log, content_type="application/json"
    )
    assert refused.status_code == 403
    missing = _upload_url(workspace, review_round).replace(
        f"/rounds/{review_round.number}/", "/rounds/99/"
    )
    assert ci.post(missing, log, content_type="application/json").status_code == 404
    assert _state(review_round) == before


def test_the_page_and_the_cli_download_valid_sarif(reviewed, workspace, alice, client_for):
    review_round, _ = reviewed
    client = client_for(alice)
    page = client.get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    assert page.status_code == 200
    link = f"/w/{workspace.slug}/reviews/{review_round.space_id}/report.sarif?download=1"
    assert link in page.content.decode()
    download = client.get(link)
    assert download.status_code == 200
    assert download["Content-Type"] == "application/sarif+json"
    assert "attachment" in download["Content-Disposition"]
    document = json.loads(download.content)
    assert sarif_schema.schema_error(document) is None
    assert document["runs"][0]["tool"]["driver"]["name"] == "Quorum"
    assert any(r["ruleId"] == "B608" for r in document["runs"][0]["results"])


def test_the_cli_writes_sarif(settings, tmp_path):
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repo = tmp_path / "shop"
    base, head = create_sample_repository(repo)
    out = io.StringIO()
    with pytest.raises(SystemExit):  # the exit code is the verdict's
        call_command(
            "review",
            str(repo),
            "--base",
            base,
            "--head",
            head,
            "--format",
            "sarif",
            stdout=out,
            stderr=io.StringIO(),
        )
    document = json.loads(out.getvalue())
    assert sarif_schema.schema_error(document) is None
    results = document["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"B608"}
    assert all(FINGERPRINT_KEY in r["partialFingerprints"] for r in results)
