from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from workspaces.models import Membership


def test_demo_setup_creates_loginable_users_and_is_repeatable(db, client):
    for _ in range(2):
        out = StringIO()
        call_command("demo_setup", "--password", "demo-pass-123", "--no-review", stdout=out)
    assert "admin@example.com" in out.getvalue() and "demo-pass-123" in out.getvalue()
    roles = dict(
        Membership.objects.filter(workspace__slug="demo").values_list("user__email", "role")
    )
    assert roles == {
        "admin@example.com": "owner",
        "approver@example.com": "approver",
        "reviewer@example.com": "reviewer",
    }
    response = client.post(
        "/accounts/login/", {"login": "approver@example.com", "password": "demo-pass-123"}
    )
    assert response.status_code == 302
    assert client.get("/w/demo/reviews/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_demo_setup_reviews_the_sample_repository_once(settings, tmp_path):
    from reviews.models import ReviewSpace

    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path / "repos"]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    settings.QUORUM_LLM_PROVIDER = ""
    for _ in range(2):
        out = StringIO()
        call_command("demo_setup", "--password", "demo-pass-123", stdout=out)
    space = ReviewSpace.objects.get()
    assert space.status == "reviewed"  # the verdict is ready; nobody asked to publish yet
    assert space.rounds.get().verdict.level == "block"
    assert space.nodes.filter(stream__name="secrets").exists()
