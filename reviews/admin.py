"""Read-only admin: review state changes only through reviews/services."""

from __future__ import annotations

from django.contrib import admin

from reviews import models


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.PullRequest)
class PullRequestAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "title", "head_sha", "updated_at")
    list_select_related = ("repository",)


@admin.register(models.ReviewSpace)
class ReviewSpaceAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "workspace", "status", "updated_at")
    list_filter = ("status",)
    list_select_related = ("workspace", "pull_request__repository")


@admin.register(models.ReviewRound)
class ReviewRoundAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "tier", "state", "stage", "created_at")
    list_filter = ("state", "tier")


@admin.register(models.ReviewerStream)
class ReviewerStreamAdmin(ReadOnlyAdmin):
    list_display = ("name", "agent", "round", "state", "accepted", "rejected")


@admin.register(models.ReviewNode)
class ReviewNodeAdmin(ReadOnlyAdmin):
    list_display = ("title", "priority", "type", "status", "confidence", "path", "start_line")
    list_filter = ("priority", "status", "type")
    list_select_related = ("stream",)


@admin.register(models.NodeConfirmation)
class NodeConfirmationAdmin(ReadOnlyAdmin):
    list_display = ("node", "agent", "lens", "verdict")


@admin.register(models.AxisResult)
class AxisResultAdmin(ReadOnlyAdmin):
    list_display = ("round", "axis", "result", "gated", "source")


@admin.register(models.Verdict)
class VerdictAdmin(ReadOnlyAdmin):
    list_display = ("round", "level", "confidence", "rule")


@admin.register(models.MemoryFact)
class MemoryFactAdmin(ReadOnlyAdmin):
    list_display = ("statement", "kind", "confidence", "binding", "created_at")
