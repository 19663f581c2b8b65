"""Settings → General, card “Token budgets”: per round and per pull request."""

from __future__ import annotations

from guardrails.models import AuditEvent

HTMX = {"HTTP_HX_REQUEST": "true"}


def _url(workspace) -> str:
    return f"/w/{workspace.slug}/settings/budgets/"


def test_an_admin_sets_both_budgets_with_an_htmx_swap_and_it_is_audited(
    workspace, member_factory, client_for
):
    admin = member_factory(workspace, "admin", "ada@example.com")
    response = client_for(admin).post(
        _url(workspace), {"round_token_budget": "40000", "pr_token_budget": "100000"}, **HTMX
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="budget-card"')
    assert 'value="40000"' in html and 'value="100000"' in html and "Saved." in html
    workspace.refresh_from_db()
    assert (workspace.round_token_budget, workspace.pr_token_budget) == (40_000, 100_000)
    event = AuditEvent.objects.get(workspace=workspace, action="rules.budgets_changed")
    assert event.payload == {
        "before": {"round": 400_000, "pull_request": None},
        "after": {"round": 40_000, "pull_request": 100_000},
    }


def test_an_empty_pr_budget_means_no_limit(workspace, alice, client_for):
    workspace.pr_token_budget = 5_000
    workspace.save(update_fields=["pr_token_budget"])
    response = client_for(alice).post(
        _url(workspace), {"round_token_budget": "400000", "pr_token_budget": ""}, follow=True
    )
    assert "Token budgets saved." in response.content.decode()
    workspace.refresh_from_db()
    assert workspace.pr_token_budget is None


def test_the_page_shows_the_budgets_and_who_may_change_them(workspace, member_factory, client_for):
    viewer = member_factory(workspace, "viewer", "vera@example.com")
    html = client_for(viewer).get(f"/w/{workspace.slug}/settings/").content.decode()
    assert "Token budgets" in html and 'value="400000"' in html
    assert "Only owners and admins can change the token budgets." in html


def test_a_reviewer_is_refused_and_nothing_changes(workspace, member_factory, client_for):
    reviewer = member_factory(workspace, "reviewer", "rita@example.com")
    response = client_for(reviewer).post(
        _url(workspace), {"round_token_budget": "1", "pr_token_budget": "1"}, **HTMX
    )
    assert response.status_code == 403
    workspace.refresh_from_db()
    assert (workspace.round_token_budget, workspace.pr_token_budget) == (400_000, None)
    denied = AuditEvent.objects.get(workspace=workspace, action="permission.denied")
    assert denied.payload["attempted"] == "change the token budgets"
    assert not AuditEvent.objects.filter(action="rules.budgets_changed").exists()


def test_bad_input_is_refused_with_a_clear_error(workspace, alice, client_for):
    client = client_for(alice)
    for data, message in (
        (
            {"round_token_budget": "0", "pr_token_budget": ""},
            "The budget per round must be a positive number of tokens.",
        ),
        (
            {"round_token_budget": "", "pr_token_budget": ""},
            "Give a budget per round: a positive number of tokens.",
        ),
        (
            {"round_token_budget": "1000", "pr_token_budget": "-5"},
            "The budget per pull request must be a positive number of tokens "
            "(leave it empty for no limit).",
        ),
        (
            {"round_token_budget": "lots", "pr_token_budget": ""},
            "The budget per round must be a whole number of tokens.",
        ),
    ):
        response = client.post(_url(workspace), data, **HTMX)
        assert response.status_code == 400, data
        assert message in response.content.decode(), data
    workspace.refresh_from_db()
    assert (workspace.round_token_budget, workspace.pr_token_budget) == (400_000, None)
    assert not AuditEvent.objects.filter(action="rules.budgets_changed").exists()


def test_the_form_is_protected_against_cross_site_posts(workspace, alice, client_for):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(_url(workspace), {"round_token_budget": "10", "pr_token_budget": ""})
    assert response.status_code == 403
    workspace.refresh_from_db()
    assert workspace.round_token_budget == 400_000


def test_the_api_reads_and_sets_the_budgets_with_the_same_checks(
    workspace, alice, member_factory, client_for
):
    url = f"/api/v1/workspaces/{workspace.slug}/budgets"
    client = client_for(alice)
    assert client.get(url).json() == {"round_token_budget": 400_000, "pr_token_budget": None}
    response = client.put(
        url,
        {"round_token_budget": 50_000, "pr_token_budget": 120_000},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json() == {"round_token_budget": 50_000, "pr_token_budget": 120_000}
    bad = client.put(url, {"round_token_budget": 0}, content_type="application/json")
    assert bad.status_code == 422
    reviewer = member_factory(workspace, "reviewer", "rita@example.com")
    refused = client_for(reviewer).put(
        url, {"round_token_budget": 1}, content_type="application/json"
    )
    assert refused.status_code == 403
    workspace.refresh_from_db()
    assert (workspace.round_token_budget, workspace.pr_token_budget) == (50_000, 120_000)
