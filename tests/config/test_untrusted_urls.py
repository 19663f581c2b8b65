"""Stored URLs are http(s) at the boundary, and pages never link anything else."""

from __future__ import annotations

import pytest

from reviews.domain.types import AxisName
from reviews.domain.types import AxisResult as Result
from reviews.models import AxisResult
from reviews.services.axes import axis_record
from reviews.services.rounds import RoundError, axis_submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def review_round(review_factory, workspace):
    return review_factory(workspace, tier="balanced")


def _axis_url(workspace, review_round) -> str:
    return f"/api/v1/workspaces/{workspace.slug}/reviews/{review_round.space_id}/axes/apiContract"


@pytest.mark.parametrize(
    "evidence",
    ["javascript:alert(document.cookie)", " JavaScript:alert(1)", "data:text/html,x", "/runs/1"],
)
def test_a_non_web_evidence_url_is_refused_at_submission(
    evidence, review_round, workspace, member_factory, client_for
):
    ci = member_factory(workspace, "reviewer", "ci-bot@example.com")
    response = client_for(ci).post(
        _axis_url(workspace, review_round),
        {"result": "pass", "evidence_url": evidence},
        content_type="application/json",
    )
    assert response.status_code == 422, response.content
    assert not AxisResult.objects.filter(round=review_round, axis="apiContract").exists()


def test_a_web_evidence_url_is_accepted(review_round, workspace, member_factory, client_for):
    ci = member_factory(workspace, "reviewer", "ci-bot@example.com")
    response = client_for(ci).post(
        _axis_url(workspace, review_round),
        {"result": "pass", "evidence_url": "https://ci.example/run/1"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    row = AxisResult.objects.get(round=review_round, axis="apiContract")
    assert row.evidence_url == "https://ci.example/run/1"


def test_the_service_refuses_it_too(review_round, alice):
    with pytest.raises(RoundError, match="evidence URL"):
        axis_submit(
            review_round=review_round,
            axis=AxisName.API_CONTRACT,
            result=Result.PASS,
            evidence_url="javascript:alert(1)",
            details={},
            actor=alice,
        )


def test_a_planted_javascript_url_is_not_rendered_as_a_link(
    review_round, workspace, alice, client_for
):
    # A row that bypassed the boundary (older release, manual SQL): the page still must not
    # turn it into a link.
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=Result.PASS,
        source="submitted",
        evidence_url="javascript:alert(document.cookie)",
    )
    axis_record(
        review_round=review_round,
        axis=AxisName.VISUAL,
        result=Result.PASS,
        source="submitted",
        evidence_url="https://ci.example/visual/1",
    )
    page = client_for(alice).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "javascript:" not in html
    assert '<a href="https://ci.example/visual/1" rel="noopener nofollow">evidence</a>' in html
