"""A workspace's general settings: its rules, its model prices and spend, the token budgets
and the GitHub handle. Thin: parse the form, check the role, call a service, render."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from reviews.domain.report_figures import tokens_line
from reviews.domain.spend import money
from reviews.models import ModelCall, ModelPrice
from reviews.selectors import workspace_spend
from reviews.services.spend import model_price_delete, model_price_set
from workspaces import rules, services
from workspaces.forms import (
    BudgetForm,
    GitHubHandleForm,
    PriceForm,
    RulesForm,
)
from workspaces.http import HtmxHttpRequest
from workspaces.models import (
    Membership,
    Workspace,
)
from workspaces.permissions import allows, require
from workspaces.rules import Perm, RuleError
from workspaces.views import member_context, member_view


def _rules_initial(ws) -> dict:
    return {
        "tier": ws.tier,
        "gated_axes": ws.gated_axes,
        "hold_unreadable_languages": ws.hold_unreadable_languages,
        "p0_dismissal_needs_approver": ws.p0_dismissal_needs_approver,
    }


@member_view
@require_http_methods(["GET", "POST"])
def general(request: HtmxHttpRequest, membership: Membership) -> HttpResponse:
    ws = membership.workspace
    form = RulesForm(initial=_rules_initial(ws))
    saved = False
    status = 200
    if request.method == "POST":
        require(
            membership, Perm.MANAGE_RULES, attempted="change the workspace rules", request=request
        )
        form = RulesForm(request.POST)
        if form.is_valid():
            try:
                ws = services.rules_update(
                    workspace=ws,
                    actor=request.user,
                    tier=form.cleaned_data["tier"],
                    gated_axes=form.cleaned_data["gated_axes"],
                    hold_unreadable_languages=form.cleaned_data["hold_unreadable_languages"],
                    p0_dismissal_needs_approver=form.cleaned_data["p0_dismissal_needs_approver"],
                    request=request,
                )
            except RuleError as exc:
                form.add_error(None, str(exc))
            else:
                saved = True
                membership.workspace = ws
                if not request.htmx:
                    messages.success(request, "Workspace rules saved.")
                    return redirect("workspaces:general", ws.slug)
        if not form.is_valid():
            status = 400
    context = _general_ctx(membership, form=form, saved=saved)
    template = "workspaces/settings_general.html"
    if request.htmx:
        template += "#rules_card"
    return render(request, template, context, status=status)


def _prices_context(membership: Membership, **extra) -> dict:

    ws = membership.workspace
    prices = list(ModelPrice.objects.filter(workspace=ws))
    priced = {p.model for p in prices}
    called = (
        ModelCall.objects.filter(round__space__workspace=ws)
        .values_list("model", flat=True)
        .distinct()
    )
    return {
        "prices": prices,
        "unpriced_models": sorted(set(called) - priced),
        "can_set_prices": allows(membership, Perm.MANAGE_RULES),
        "price_form": extra.pop("price_form", None) or PriceForm(),
        **extra,
    }


def _general_ctx(membership: Membership, **extra) -> dict:
    ws = membership.workspace
    return member_context(
        membership,
        **{
            "form": RulesForm(initial=_rules_initial(ws)),
            "budget_form": BudgetForm(
                initial={
                    "round_token_budget": ws.round_token_budget,
                    "pr_token_budget": ws.pr_token_budget,
                }
            ),
            "handle_form": GitHubHandleForm(initial={"github_handle": ws.github_handle}),
            "tier_help": [(t.value, rules.TIER_HELP[t]) for t in rules.Tier],
            "default_tier": Workspace._meta.get_field("tier").default,
            "can_edit": allows(membership, Perm.MANAGE_RULES),
            **_prices_context(membership),
            **extra,
        },
    )


@member_view
@require_POST
def prices(request: HttpRequest, membership: Membership) -> HttpResponse:
    """An admin sets (or removes) what a model costs per million tokens."""

    require(membership, Perm.MANAGE_RULES, attempted="set model prices", request=request)
    ws = membership.workspace
    form = PriceForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["remove"]:
                model_price_delete(
                    workspace=ws, actor=request.user, model=data["model"], request=request
                )
                messages.success(request, f"Price of {data['model']} removed.")
            else:
                model_price_set(
                    workspace=ws,
                    actor=request.user,
                    model=data["model"],
                    input_price=data["input_price"],
                    cached_input_price=data["cached_input_price"],
                    output_price=data["output_price"],
                    request=request,
                )
                messages.success(request, f"Price of {data['model']} saved.")
        except RuleError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect(reverse("workspaces:general", args=[ws.slug]) + "#prices")
    context = _general_ctx(membership, price_form=form)
    return render(request, "workspaces/settings_general.html", context, status=400)


@member_view
@require_http_methods(["GET"])
def spend(request: HttpRequest, membership: Membership) -> HttpResponse:
    """What the workspace's model calls cost, per month, per day, per reviewer and per model."""

    data = workspace_spend(membership.workspace_id)

    def rows(items):
        return [(r.key, r.totals, money(r.totals.cost)) for r in items]

    context = member_context(
        membership,
        total=data.total,
        total_line=tokens_line(data.total) if data.total.calls else "",
        by_month=rows(reversed(data.by_month)),
        by_day=rows(list(reversed(data.by_day))[:62]),
        by_name=rows(data.by_name),
        by_role=rows(data.by_role),
        by_model=rows(data.by_model),
        unpriced=data.unpriced,
        can_set_prices=allows(membership, Perm.MANAGE_RULES),
    )
    return render(request, "workspaces/spend.html", context)


# A general settings card's template fragment → the names its form and "saved" flag go by.
_GENERAL_CARDS = {
    "budget_card": ("budget_form", "budget_saved"),
    "handle_card": ("handle_form", "handle_saved"),
}


def _general_card(
    request: HtmxHttpRequest,
    membership: Membership,
    form: Any,
    save: Callable[[dict[str, Any]], Any],
    *,
    card: str,
    saved_message: str,
) -> HttpResponse:
    """One card of the general settings saved: `save` takes the cleaned form and returns the
    workspace; with htmx the card alone comes back, without it the page (or the card's errors)."""
    saved = False
    if form.is_valid():
        try:
            membership.workspace = save(form.cleaned_data)
        except RuleError as exc:
            form.add_error(None, str(exc))
        else:
            saved = True
            if not request.htmx:
                messages.success(request, saved_message)
                return redirect("workspaces:general", membership.workspace.slug)
    form_name, saved_name = _GENERAL_CARDS[card]
    context = _general_ctx(membership, **{form_name: form, saved_name: saved})
    template = "workspaces/settings_general.html"
    if request.htmx:
        template += f"#{card}"
    return render(request, template, context, status=200 if saved else 400)


@member_view
@require_POST
def budgets(request: HtmxHttpRequest, membership: Membership) -> HttpResponse:
    """The token budgets card of the general settings (admins and owners only)."""
    require(membership, Perm.MANAGE_RULES, attempted="change the token budgets", request=request)
    return _general_card(
        request,
        membership,
        BudgetForm(request.POST),
        lambda data: services.budgets_update(
            workspace=membership.workspace,
            actor=request.user,
            round_token_budget=data["round_token_budget"],
            pr_token_budget=data["pr_token_budget"],
            request=request,
        ),
        card="budget_card",
        saved_message="Token budgets saved.",
    )


@member_view
@require_POST
def github_handle(request: HtmxHttpRequest, membership: Membership) -> HttpResponse:
    """The GitHub handle card of the general settings (admins and owners only)."""
    require(membership, Perm.MANAGE_RULES, attempted="change the GitHub handle", request=request)
    return _general_card(
        request,
        membership,
        GitHubHandleForm(request.POST),
        lambda data: services.github_handle_update(
            workspace=membership.workspace,
            actor=request.user,
            handle=data["github_handle"],
            request=request,
        ),
        card="handle_card",
        saved_message="GitHub handle saved.",
    )
