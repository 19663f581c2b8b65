"""Settings → Workspace → General, card “Workspace rules”."""

from __future__ import annotations

from guardrails.models import AuditEvent

HTMX = {"HTTP_HX_REQUEST": "true"}


def test_it_changes_the_tier_with_an_htmx_swap_and_audits_it(workspace, alice, client_for):
    """POST with htmx headers persists the tier, returns only the card, and records before/after."""
    client = client_for(alice)
    url = f"/w/{workspace.slug}/settings/"
    response = client.post(
        url, {"tier": "thorough", "gated_axes": ["apiContract", "visual"]}, **HTMX
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="rules-card"')
    assert "<html" not in html
    assert 'value="thorough" checked' in html
    workspace.refresh_from_db()
    assert workspace.tier == "thorough"
    assert workspace.gated_axes == ["visual", "apiContract"]

    tier_event = AuditEvent.objects.get(workspace=workspace, action="rules.tier_changed")
    assert tier_event.payload == {"before": "balanced", "after": "thorough"}
    assert tier_event.actor_label == "alice@example.com"
    axes_event = AuditEvent.objects.get(workspace=workspace, action="rules.gated_axes_changed")
    assert axes_event.payload == {"before": ["apiContract"], "after": ["visual", "apiContract"]}


def test_it_renders_the_page_with_every_tier_explained(workspace, alice, client_for):
    html = client_for(alice).get(f"/w/{workspace.slug}/settings/").content.decode()
    for tier in ("Light", "Balanced", "Thorough", "Adaptive"):
        assert f"<strong>{tier}</strong>" in html
    assert "Implementation reviewer only" in html
    assert "(default)" in html


def test_it_refuses_a_viewer_and_audits_the_denial(workspace, member_factory, client_for):
    viewer = member_factory(workspace, "viewer", "vera@example.com")
    response = client_for(viewer).post(f"/w/{workspace.slug}/settings/", {"tier": "light"}, **HTMX)

    assert response.status_code == 403
    workspace.refresh_from_db()
    assert workspace.tier == "balanced"
    denied = AuditEvent.objects.get(workspace=workspace, action="permission.denied")
    assert denied.actor_label == "vera@example.com"
    assert denied.payload == {
        "attempted": "change the workspace rules",
        "role": "viewer",
        "needs": "admin",
    }
    assert not AuditEvent.objects.filter(action="rules.tier_changed").exists()


def test_it_rejects_an_unknown_tier_and_changes_nothing(workspace, alice, client_for):
    before = AuditEvent.objects.count()
    response = client_for(alice).post(
        f"/w/{workspace.slug}/settings/", {"tier": "reckless"}, **HTMX
    )
    assert response.status_code == 400
    assert "Select a valid choice. reckless is not one of the available choices." in (
        response.content.decode()
    )
    workspace.refresh_from_db()
    assert workspace.tier == "balanced"
    assert AuditEvent.objects.count() == before


def test_it_rejects_an_unknown_tier_through_the_api(workspace, alice, client_for):
    response = client_for(alice).put(
        f"/api/v1/workspaces/{workspace.slug}/rules",
        {"tier": "reckless", "gated_axes": ["correctness"]},
        content_type="application/json",
    )
    assert response.status_code == 422
    fields = {tuple(err["loc"][-2:]) for err in response.json()["detail"]}
    assert ("body", "tier") in fields or any("tier" in loc for loc in fields)
    workspace.refresh_from_db()
    assert workspace.tier == "balanced"


def test_it_works_without_javascript(workspace, alice, client_for):
    """A plain form POST redirects back to the page with a message (no htmx needed)."""
    client = client_for(alice)
    response = client.post(f"/w/{workspace.slug}/settings/", {"tier": "light"}, follow=True)
    assert response.redirect_chain[-1][1] == 302
    assert "Workspace rules saved." in response.content.decode()


def test_an_admin_makes_dismissing_a_p0_need_an_approver(workspace, alice, client_for):
    """The switch sits in the rules card, off by default; saving it on is audited, and the
    page and the API show it on."""
    client = client_for(alice)
    url = f"/w/{workspace.slug}/settings/"
    page = client.get(url).content.decode()
    assert "Dismissing a P0 finding needs an approver" in page
    assert (
        'name="p0_dismissal_needs_approver"' in page
        and "checked" not in page.split('name="p0_dismissal_needs_approver"')[1].split(">")[0]
    )

    response = client.post(
        url,
        {
            "tier": workspace.tier,
            "gated_axes": ["apiContract"],
            "p0_dismissal_needs_approver": "on",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert 'name="p0_dismissal_needs_approver" id="id_p0_dismissal_needs_approver" checked' in (
        response.content.decode()
    )
    workspace.refresh_from_db()
    assert workspace.p0_dismissal_needs_approver is True
    event = AuditEvent.objects.get(action="rules.p0_dismissal_approver_changed")
    assert event.payload == {"before": False, "after": True}
    assert event.actor_label == "alice@example.com"
    rules = client.get(f"/api/v1/workspaces/{workspace.slug}/rules").json()
    assert rules["p0_dismissal_needs_approver"] is True

    # The API turns it off again (a PUT without the field leaves it as it is).
    api = f"/api/v1/workspaces/{workspace.slug}/rules"
    body = {"tier": workspace.tier, "gated_axes": ["apiContract"]}
    assert client.put(api, body, content_type="application/json").json()[
        "p0_dismissal_needs_approver"
    ]
    off = client.put(
        api, {**body, "p0_dismissal_needs_approver": False}, content_type="application/json"
    )
    assert off.status_code == 200 and off.json()["p0_dismissal_needs_approver"] is False
    workspace.refresh_from_db()
    assert workspace.p0_dismissal_needs_approver is False
    assert AuditEvent.objects.filter(action="rules.p0_dismissal_approver_changed").count() == 2


def test_a_reviewer_cannot_switch_it(workspace, member_factory, client_for):
    bob = member_factory(workspace, "reviewer", "bob@example.com")
    page = client_for(bob).get(f"/w/{workspace.slug}/settings/").content.decode()
    assert "Dismissing a P0 finding needs an approver" in page  # shown, in a disabled fieldset
    response = client_for(bob).post(
        f"/w/{workspace.slug}/settings/",
        {"tier": workspace.tier, "p0_dismissal_needs_approver": "on"},
        **HTMX,
    )
    assert response.status_code == 403
    workspace.refresh_from_db()
    assert workspace.p0_dismissal_needs_approver is False
