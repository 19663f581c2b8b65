"""Forms for the settings pages. They parse; the services decide (workspaces/services/).
Reviewer profiles are checked against the shapes in workspaces/rules.py, which the API and the
service use too; a form shows their problems as its own errors."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.http import QueryDict
from pydantic import ValidationError

from workspaces import rules
from workspaces.models import Membership, Repository, ReviewerConfig


class WorkspaceCreateForm(forms.Form):
    name = forms.CharField(max_length=100)


class RulesForm(forms.Form):
    tier = forms.ChoiceField(
        choices=[(t.value, t.value.capitalize()) for t in rules.Tier], widget=forms.RadioSelect
    )
    gated_axes = forms.MultipleChoiceField(
        choices=[(a, a) for a in rules.GATEABLE_AXES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    hold_unreadable_languages = forms.BooleanField(
        required=False,
        label="Hold a change in a language whose API Quorum cannot read (apiContract unavailable)",
    )
    p0_dismissal_needs_approver = forms.BooleanField(
        required=False,
        label="Dismissing a P0 finding needs an approver",
    )


class PriceForm(forms.Form):
    """A model's price per million tokens; the service checks the name and the decimals."""

    model = forms.CharField(max_length=120)
    input_price = forms.CharField(max_length=20, required=False, label="Input, per million")
    cached_input_price = forms.CharField(
        max_length=20, required=False, label="Cached input, per million (blank: the input price)"
    )
    output_price = forms.CharField(max_length=20, required=False, label="Output, per million")
    remove = forms.BooleanField(required=False)


class BudgetForm(forms.Form):
    """The token budgets; the service checks them again (workspaces/rules.py)."""

    round_token_budget = forms.IntegerField(
        label="Budget per round",
        min_value=1,
        max_value=rules.MAX_TOKEN_BUDGET,
        help_text="Tokens one round may spend on models, all its calls together.",
        error_messages={
            "required": "Give a budget per round: a positive number of tokens.",
            "invalid": "The budget per round must be a whole number of tokens.",
            "min_value": "The budget per round must be a positive number of tokens.",
        },
    )
    pr_token_budget = forms.IntegerField(
        label="Budget per pull request",
        min_value=1,
        max_value=rules.MAX_TOKEN_BUDGET,
        required=False,
        help_text="Tokens every round of one pull request may spend together; empty: no limit.",
        error_messages={
            "invalid": "The budget per pull request must be a whole number of tokens, or empty.",
            "min_value": "The budget per pull request must be a positive number of tokens "
            "(leave it empty for no limit).",
        },
    )


class GitHubHandleForm(forms.Form):
    """Quorum's handle on GitHub; the service checks its spelling (workspaces/rules.py)."""

    github_handle = forms.CharField(
        label="Handle on GitHub",
        max_length=40,
        help_text="A comment on GitHub that mentions @handle in a finding's conversation is a "
        "question for the reviewer who wrote the finding.",
        error_messages={"required": "Give the handle people write after @, e.g. quorum."},
    )


class InviteForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=rules.Role.REVIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class ReviewerConfigForm(forms.Form):
    name = forms.CharField(max_length=100)
    base_agent = forms.ChoiceField(choices=ReviewerConfig.BaseAgent.choices)
    enabled = forms.BooleanField(required=False)
    brief = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    model_provider = forms.ChoiceField(choices=ReviewerConfig.Provider.choices, required=False)
    model_name = forms.CharField(max_length=200, required=False)
    base_url = forms.CharField(
        max_length=300,
        required=False,
        label="Model base URL",
        help_text="The model server's endpoint, e.g. https://api.openai.com/v1; empty: the "
        "server's default.",
    )
    api_key = forms.CharField(
        max_length=rules.MODEL_KEY_MAX,
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        label="Model key",
        help_text="This reviewer's own key for its endpoint: stored sealed, never shown again. "
        "Empty: keep the stored one.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored model key")
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="Key variable",
        help_text="Or the NAME of a server variable holding the key, if the operator allows it "
        "(QUORUM_MODEL_KEY_VARIABLES). Neither: the server's key, sent only to the server's "
        "own endpoint.",
    )
    tiers = forms.MultipleChoiceField(
        choices=[(t, t.capitalize()) for t in rules.REVIEWER_TIERS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Runs in",
        help_text="The tiers this reviewer runs in; adaptive: whenever an adaptive round selects "
        "the reviewer of its base agent's dimension.",
    )
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    anti_patterns = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="One named anti-pattern per line.",
    )
    criteria = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="One criterion per line as “name = weight”, weight in (0, 10].",
    )
    calibrated_model = forms.CharField(
        max_length=220,
        required=False,
        help_text="The model the few-shots were tuned on, as provider:model.",
    )

    def __init__(self, *args: Any, builtin: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if builtin:  # a built-in reviewer runs where the pipeline template says
            del self.fields["tiers"]

    def clean_base_url(self) -> str:
        try:
            return rules.clean_base_url(self.cleaned_data["base_url"])
        except rules.RuleError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_api_key(self) -> str:
        try:
            return rules.clean_model_key(self.cleaned_data["api_key"])
        except rules.RuleError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # The service's "api_key": absent keeps the stored key, "" removes it.
        clear = data.pop("clear_api_key", False)
        if clear:
            data["api_key"] = ""
        elif not data.get("api_key"):
            data.pop("api_key", None)
        return data

    def clean_api_key_env(self) -> str:
        value = self.cleaned_data["api_key_env"]
        try:
            return rules.clean_api_key_env(value, settings.QUORUM_MODEL_KEY_VARIABLES)
        except rules.RuleError as exc:
            if rules.looks_like_a_key(value):  # not shown again in the re-rendered form
                data = QueryDict(mutable=True)
                data.update(self.data)  # every value of a multi-valued field (the tiers) kept
                data["api_key_env"] = ""
                self.data = data
            raise forms.ValidationError(str(exc)) from exc

    def clean_anti_patterns(self) -> list[str]:
        try:
            return rules.clean_anti_patterns(_lines(self.cleaned_data["anti_patterns"]))
        except rules.RuleError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_criteria(self) -> list[dict]:
        parsed = []
        for i, line in enumerate(_lines(self.cleaned_data["criteria"]), start=1):
            name, sep, weight = line.rpartition("=")
            try:
                value = float(weight)
            except ValueError:
                value = None
            if not sep or not name.strip() or value is None:
                raise forms.ValidationError(
                    f"Line {i}: write “name = weight”, e.g. “security = 3”."
                )
            parsed.append(
                {"name": name.strip(), "weight": int(value) if value.is_integer() else value}
            )
        try:
            return rules.clean_criteria(parsed)
        except rules.RuleError as exc:
            raise forms.ValidationError(str(exc)) from exc

    @classmethod
    def initial_for(cls, config: ReviewerConfig) -> dict:
        return {
            "name": config.name,
            "base_agent": config.base_agent,
            "enabled": config.enabled,
            "brief": config.brief,
            "model_provider": config.model_provider,
            "model_name": config.model_name,
            "base_url": config.base_url,
            "api_key_env": config.api_key_env,
            "tiers": list(config.tiers),
            "instructions": config.instructions,
            "anti_patterns": "\n".join(config.anti_patterns),
            "criteria": "\n".join(f"{c['name']} = {c['weight']}" for c in config.criteria),
            "calibrated_model": config.calibrated_model,
        }


class FewShotForm(forms.Form):
    excerpt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "class": "code"}), required=False, strip=False
    )
    good = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, label="Good verdict"
    )
    bad = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, label="Bad verdict to avoid"
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        filled = [f for f in ("excerpt", "good", "bad") if (data.get(f) or "").strip()]
        if filled and not {"excerpt", "good"} <= set(filled):
            raise forms.ValidationError("A few-shot needs both a code excerpt and a good verdict.")
        if filled:
            shot = {f: data.get(f) or "" for f in ("excerpt", "good", "bad")}
            try:
                rules.FewShot.model_validate(shot)
            except ValidationError as exc:
                for error in exc.errors():
                    field = str(error["loc"][0]) if error["loc"] else None
                    message = str(error["msg"]).removeprefix("Value error, ")
                    self.add_error(field if field in self.fields else None, message)
        return data


class FewShotProposalForm(FewShotForm):
    """A proposed few-shot as an admin accepts or edits it: the same fields and checks as a
    few-shot of the settings form, and the excerpt and the good verdict are required."""

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors and not {"excerpt", "good"} <= {
            f for f in ("excerpt", "good") if (data.get(f) or "").strip()
        }:
            raise forms.ValidationError("A few-shot needs both a code excerpt and a good verdict.")
        return data

    def shot(self) -> dict[str, str]:
        data = self.cleaned_data
        return {f: data.get(f) or "" for f in ("excerpt", "good", "bad")}


# absolute_max: a forged TOTAL_FORMS builds at most 50 forms (Django's default is 1,050).
FewShotFormSet = forms.formset_factory(
    FewShotForm, extra=1, can_delete=True, max_num=50, absolute_max=50, validate_max=True
)


def few_shots_from(formset) -> list[dict]:
    shots = []
    for form in formset:
        data = form.cleaned_data
        if not data or data.get("DELETE") or not (data.get("excerpt") or "").strip():
            continue
        shots.append({"excerpt": data["excerpt"], "good": data["good"], "bad": data.get("bad", "")})
    return shots


class RepositoryForm(forms.Form):
    kind = forms.ChoiceField(choices=Repository.Kind.choices, widget=forms.RadioSelect)
    name = forms.CharField(
        max_length=1024, help_text="owner/name for GitHub, or an absolute path on the server."
    )
    base_branch = forms.CharField(max_length=200, initial="main")
    auto_review = forms.BooleanField(required=False, label="Review automatically on push")
    review_drafts = forms.BooleanField(
        required=False, label="Review draft pull requests automatically too"
    )


class RepositoryUpdateForm(forms.Form):
    base_branch = forms.CharField(max_length=200)
    auto_review = forms.BooleanField(required=False)
    review_drafts = forms.BooleanField(required=False)
    # The GitHub check run concludes Hold as failure instead of neutral.
    hold_fails_check = forms.BooleanField(required=False)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    agent_name = forms.CharField(
        max_length=40,
        required=False,
        label="For an agent (optional)",
        help_text='A coding agent\'s name, e.g. "claude-code on my laptop". The token then acts '
        "as that agent for you: at most a reviewer's role, named in the audit trail.",
    )
