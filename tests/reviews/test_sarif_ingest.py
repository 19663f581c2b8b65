"""Uploading SARIF for a finished round, without the pipeline: a CodeQL-style log (rule
metadata, CWE tags, `security-severity`), the verdict following it, and the round states that
refuse an upload."""

from __future__ import annotations

import copy

import pytest

from config.background import drain
from guardrails.models import AuditEvent
from reviews.domain.types import AxisName, AxisResult
from reviews.models import ReviewerStream, ReviewNode, SarifUpload, Verdict, VerdictChange
from reviews.services.axes import axis_record
from reviews.services.sarif import sarif_process
from reviews.services.spaces import space_status_refresh
from reviews.services.verdicts import round_finalise
from tests.reviews.sarif_uploads import upload_and_wait

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _embedded_background(settings):
    settings.REDIS_URL = ""  # uploads are recorded by a server thread, as in the embedded default


DIFF = """\
diff --git a/app/db.py b/app/db.py
new file mode 100644
--- /dev/null
+++ b/app/db.py
@@ -0,0 +1,3 @@
+import sqlite3
+def find(term):
+    return sqlite3.connect("x").execute("SELECT * FROM t WHERE n = '%s'" % term)
"""

CODEQL = {
    "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
    "version": "2.1.0",
    "runs": [
        {
            "tool": {
                "driver": {
                    "name": "CodeQL",
                    "semanticVersion": "2.20.0",
                    "rules": [
                        {
                            "id": "py/sql-injection",
                            "shortDescription": {"text": "SQL query built from user input"},
                            "helpUri": "https://codeql.github.com/codeql-query-help/python/",
                            "properties": {
                                "tags": ["security", "external/cwe/cwe-089"],
                                "security-severity": "8.8",
                                "precision": "high",
                            },
                        }
                    ],
                }
            },
            "results": [
                {
                    "ruleId": "py/sql-injection",
                    "ruleIndex": 0,
                    "message": {"text": "This SQL query depends on a user-provided value."},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": "app/db.py", "uriBaseId": "%SRCROOT%"},
                                "region": {"startLine": 3, "startColumn": 12},
                            }
                        }
                    ],
                },
                {
                    "ruleId": "py/sql-injection",
                    "ruleIndex": 0,
                    "message": {"text": "Somewhere the change does not touch."},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": "app/old.py"},
                                "region": {"startLine": 40},
                            }
                        }
                    ],
                },
                {"ruleId": "py/sql-injection", "message": {"text": "No location at all."}},
            ],
        }
    ],
}


@pytest.fixture
def finished(review_factory, workspace):
    review_round = review_factory(workspace, tier="light")
    review_round.diff = DIFF
    review_round.save(update_fields=["diff"])
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.PASS,
        source="deterministic",
    )
    round_finalise(review_round=review_round)
    review_round.state = "finished"
    review_round.save(update_fields=["state"])
    space_status_refresh(space=review_round.space)
    return review_round


def _url(workspace, review_round) -> str:
    return (
        f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}"
        f"/rounds/{review_round.number}/sarif"
    )


def test_a_codeql_finding_on_the_change_holds_the_change(
    finished, workspace, member_factory, client_for
):
    assert Verdict.objects.get(round=finished).level == "ship"
    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))

    outcome = upload_and_wait(ci, _url(workspace, finished), CODEQL)

    assert outcome["state"] == "done" and outcome["results"] == 3, outcome
    (run,) = outcome["runs"]
    assert run | {"stream": "CodeQL"} == {
        "tool": "CodeQL",
        "stream": "CodeQL",
        "results": 3,
        "on_change": 1,
        "findings": 1,
        "added": 1,
        "already": 0,
        "outside": 2,
        "rejected": 0,
    }
    node = ReviewNode.objects.get(round=finished)
    assert (node.path, node.start_line, node.priority, node.category, node.type) == (
        "app/db.py",
        3,
        "P1",
        "security",
        "bug",
    )
    assert node.title.startswith("py/sql-injection: This SQL query")
    assert "CWE-89" in node.body and node.tags.analyzer.rule == "py/sql-injection"
    assert node.tags.analyzer.high_precision is False and node.confidence == 0.8
    stream = ReviewerStream.objects.get(round=finished, name="CodeQL")
    assert stream.coverage_note == (
        "SARIF from CodeQL 2.20.0: 3 result(s), 1 on lines the change adds as 1 finding(s) "
        "(one per rule per file), 2 outside the change (counted, not shown)."
    )
    # The verdict follows, and says why.
    assert outcome["verdict"] == "hold"
    change = VerdictChange.objects.get(round=finished)
    assert (change.old_level, change.new_level) == ("ship", "hold")
    assert change.reason == "1 finding(s) from SARIF (CodeQL)"


def test_a_round_that_has_not_finished_refuses_the_upload(
    review_factory, workspace, member_factory, client_for
):
    review_round = review_factory(workspace, tier="light")
    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))
    response = ci.post(_url(workspace, review_round), CODEQL, content_type="application/json")
    assert response.status_code == 409
    assert response.json()["code"] == "round_not_finished"
    assert not ReviewerStream.objects.filter(round=review_round, name="CodeQL").exists()


def test_the_schema_error_names_the_path(finished, workspace, member_factory, client_for):
    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))
    bad = copy.deepcopy(CODEQL)
    del bad["runs"][0]["tool"]["driver"]["name"]
    response = ci.post(_url(workspace, finished), bad, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["path"] == "$.runs[0].tool.driver"
    assert response.json()["schema_error"] == "'name' is a required property"
    not_sarif = ci.post(_url(workspace, finished), {"hello": 1}, content_type="application/json")
    assert not_sarif.status_code == 422  # not even the route's body shape
    assert not ReviewNode.objects.filter(round=finished).exists()


def _log(tool: str, lines: range) -> dict:
    return {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": tool}},
                "results": [
                    {
                        "ruleId": f"R{n % 7}",
                        "level": "note",
                        "message": {"text": f"Finding on line {n}."},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": "big.py"},
                                    "region": {"startLine": n},
                                }
                            }
                        ],
                    }
                    for n in lines
                ],
            }
        ],
    }


@pytest.mark.django_db  # on_commit never fires: the test records the upload itself
def test_an_uploads_queries_do_not_grow_with_its_results(
    review_factory, workspace, member_factory, client_for
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    review_round = review_factory(workspace, tier="light")
    added = "".join(f"+x{n} = {n}\n" for n in range(1, 401))
    review_round.diff = (
        "diff --git a/big.py b/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/big.py\n"
        f"@@ -0,0 +1,400 @@\n{added}"
    )
    review_round.state = "finished"
    review_round.save(update_fields=["diff", "state"])
    round_finalise(review_round=review_round)
    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))
    counts = []
    for tool, lines in (("small", range(1, 6)), ("large", range(1, 401))):
        log = _log(tool, lines)
        with CaptureQueriesContext(connection) as request_queries:
            response = ci.post(_url(workspace, review_round), log, content_type="application/json")
        assert response.status_code == 202, response.content
        with CaptureQueriesContext(connection) as queries:
            upload = sarif_process(upload_id=response.json()["upload"])
        assert upload.state == "done", upload.error
        (run,) = upload.runs
        # One finding per rule per file: R0…R6 in one file, so at most seven findings.
        rules = min(len(lines), 7)
        assert (run["on_change"], run["findings"], run["added"]) == (len(lines), rules, rules)
        counts.append((len(request_queries), len(queries)))
    (small_request, small), (large_request, large) = counts
    assert large <= small + 5, counts
    assert large_request == small_request, counts  # the request only checks and stores


def test_the_request_stores_the_log_and_a_worker_records_it(
    finished, workspace, member_factory, user_factory, client_for
):
    """The request answers before any result is matched; the finding appears once the
    worker ran, and the status says so."""
    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))
    response = ci.post(_url(workspace, finished), CODEQL, content_type="application/json")
    assert response.status_code == 202, response.content
    accepted = response.json()
    assert (accepted["state"], accepted["results"], accepted["verdict"]) == ("queued", 3, None)
    upload = SarifUpload.objects.get(pk=accepted["upload"])
    assert upload.state == "queued" and not ReviewNode.objects.filter(round=finished).exists()
    assert AuditEvent.objects.filter(action="sarif.received").count() == 1

    assert drain(60)
    status = ci.get(accepted["status_url"]).json()
    assert status["state"] == "done" and status["runs"][0]["added"] == 1
    assert ReviewNode.objects.filter(round=finished).count() == 1
    # A status of another round, or of nothing, is a 404; a non-member sees nothing.
    assert ci.get(accepted["status_url"].replace("/sarif/", "/sarif/9")).status_code == 404
    outsider = client_for(user_factory("out@example.com"))
    assert outsider.get(accepted["status_url"]).status_code == 404


@pytest.mark.django_db  # on_commit never fires: the worker runs when the test says
def test_a_round_superseded_before_the_worker_ran_fails_the_upload_and_says_why(
    finished, workspace, member_factory, client_for
):
    from reviews.services.rounds import round_start

    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))
    response = ci.post(_url(workspace, finished), CODEQL, content_type="application/json")
    assert response.status_code == 202, response.content
    upload_id = response.json()["upload"]
    assert SarifUpload.objects.get(pk=upload_id).state == "queued"

    round_start(space=finished.space, head_sha=finished.head_sha, tier="light")
    upload = sarif_process(upload_id=upload_id)
    assert upload.state == "failed" and "round 2 is" in upload.error
    assert not ReviewNode.objects.filter(round=finished).exists()
    status = ci.get(response.json()["status_url"]).json()
    assert (status["state"], status["runs"]) == ("failed", [])
    assert "not the newest" in status["error"]
    # Done or failed is final: a redelivered message changes nothing.
    assert sarif_process(upload_id=upload_id).error == upload.error


def test_an_upload_for_a_round_a_newer_one_superseded_is_refused(
    finished, workspace, member_factory, client_for
):
    from reviews.services.rounds import round_start

    round_start(space=finished.space, head_sha=finished.head_sha, tier="light")
    ci = client_for(member_factory(workspace, "reviewer", "ci@example.com"))
    response = ci.post(_url(workspace, finished), CODEQL, content_type="application/json")
    assert response.status_code == 409
    assert response.json()["code"] == "round_superseded"
    assert "round 2 is" in response.json()["detail"]
    assert not ReviewerStream.objects.filter(round=finished, name="CodeQL").exists()


def test_an_upload_whose_message_was_lost_is_recorded_by_the_sweeper(finished):
    """Stored but never handed to a worker (the broker was down, the server restarted): the
    next sweep after an interval queues it again, and it is recorded once."""
    from datetime import timedelta

    from django.utils import timezone

    from reviews.pipeline.sweeper import sweep_once

    upload = SarifUpload.objects.create(round=finished, document=CODEQL, results=3)
    assert sweep_once(force=True, interval=60) is not None
    assert drain(30) and SarifUpload.objects.get(pk=upload.pk).state == "queued"  # too recent

    SarifUpload.objects.filter(pk=upload.pk).update(created_at=timezone.now() - timedelta(hours=1))
    sweep_once(force=True, interval=60)
    assert drain(60)
    upload.refresh_from_db()
    assert upload.state == "done" and upload.runs[0]["added"] == 1
    assert ReviewNode.objects.filter(round=finished).count() == 1
