from __future__ import annotations

from typing import Any

from django import forms

from reviews.domain.consensus import Action
from workspaces.models import Repository, Workspace


class NewReviewForm(forms.Form):
    repository = forms.ModelChoiceField(queryset=Repository.objects.none())
    number = forms.IntegerField(min_value=1, required=False, label="PR number (GitHub)")
    base = forms.CharField(max_length=255, required=False, label="Base ref (local)")
    head = forms.CharField(max_length=255, required=False, label="Head ref (local)")
    original_request = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Original request (optional)",
        help_text="What was asked for; the requirements reviewer compares the change with it.",
    )

    def __init__(self, *args, workspace: Workspace, **kwargs):
        super().__init__(*args, **kwargs)
        # A disconnected (archived) repository keeps its reviews but takes no new ones.
        repository = self.fields["repository"]
        assert isinstance(repository, forms.ModelChoiceField)
        repository.queryset = workspace.repositories.filter(archived_at__isnull=True)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        repo = data.get("repository")
        if repo is None:
            return data
        if repo.kind == Repository.Kind.GITHUB and not data.get("number"):
            raise forms.ValidationError("A GitHub repository needs the pull request number.")
        if repo.kind == Repository.Kind.LOCAL and not data.get("head"):
            raise forms.ValidationError("A local repository needs at least the head ref.")
        return data


class NodeActionForm(forms.Form):
    action = forms.ChoiceField(choices=[(a.value, a.value) for a in Action])
    reason = forms.CharField(max_length=2000, required=False)
