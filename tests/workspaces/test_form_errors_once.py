"""An error about a whole form is shown once, in the alert above it, not again inside the form."""

from __future__ import annotations

import re

import pytest

from tests.workspaces.test_reviewers import _form
from workspaces.models import Repository

pytestmark = pytest.mark.django_db


def _alerts(html: str) -> list[str]:
    return re.findall(r'<div class="errors" role="alert">(.*?)</div>', html, re.S)


def test_a_new_review_without_a_head_ref_says_so_once(workspace, alice, client_for, tmp_path):
    repo = Repository.objects.create(workspace=workspace, kind="local", local_path=str(tmp_path))
    response = client_for(alice).post(f"/w/{workspace.slug}/reviews/", {"repository": repo.pk})
    html = response.content.decode()
    message = "A local repository needs at least the head ref."
    assert response.status_code == 400
    assert html.count(message) == 1
    assert any(message in alert for alert in _alerts(html))


def test_a_half_filled_few_shot_and_a_taken_reviewer_key_each_say_so_once(
    workspace, alice, client_for
):
    data = _form(key="quality", **{"shots-1-excerpt": "x = 1", "shots-1-good": ""})
    response = client_for(alice).post(f"/w/{workspace.slug}/settings/reviewers/new/", data)
    html = response.content.decode()
    assert response.status_code == 400
    shot = "A few-shot needs both a code excerpt and a good verdict."
    assert html.count(shot) == 1
    assert any(shot in alert for alert in _alerts(html))
    # A key already taken is refused by the service once the fields are valid.
    del data["shots-1-excerpt"]
    response = client_for(alice).post(f"/w/{workspace.slug}/settings/reviewers/new/", data)
    html = response.content.decode()
    assert response.status_code == 400
    [alert] = _alerts(html)
    reason = re.sub(r"<[^>]+>", "", alert).strip()
    assert reason and html.count(reason) == 1, reason
