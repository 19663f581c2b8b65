"""The workspace's reviewer configurations: create, change, delete."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from guardrails.audit import Actor, Target, audit_record
from workspaces import rules
from workspaces.models import (
    ReviewerConfig,
    Workspace,
)
from workspaces.rules import RuleError
from workspaces.sealing import seal

_REVIEWER_FIELDS = (
    "name",
    "base_agent",
    "brief",
    "enabled",
    "model_provider",
    "model_name",
    "instructions",
    "anti_patterns",
    "criteria",
    "few_shots",
    "calibrated_model",
    "base_url",
    "api_key_env",
    "tiers",
    # Write-only: the reviewer's own model key, sealed before it is stored ("" clears it).
    "api_key",
)

# Stream names the pipeline gives its own runs: a custom reviewer cannot take one.
_RESERVED_KEYS = (
    "ruff",
    "bandit",
    "secrets",
    "oxlint",
    "ast-grep",
    "combined",
    "security",
    "performance",
)
_RESERVED_PREFIXES = ("followup-", "lens-")


def _clean_reviewer_data(data: dict[str, Any]) -> dict[str, Any]:
    unknown = set(data) - set(_REVIEWER_FIELDS)
    if unknown:
        raise RuleError(f"Unknown reviewer field(s): {', '.join(sorted(unknown))}.")
    clean = dict(data)
    if "name" in clean and not str(clean["name"]).strip():
        raise RuleError("A reviewer needs a name.")
    if "base_agent" in clean and clean["base_agent"] not in rules.BASE_AGENTS:
        raise RuleError(
            f"Unknown base agent {clean['base_agent']!r}; one of: {', '.join(rules.BASE_AGENTS)}."
        )
    if "model_provider" in clean and clean["model_provider"] not in rules.MODEL_PROVIDERS:
        raise RuleError(f"Unknown model provider {clean['model_provider']!r}.")
    if "anti_patterns" in clean:
        clean["anti_patterns"] = rules.clean_anti_patterns(clean["anti_patterns"])
    if "criteria" in clean:
        clean["criteria"] = rules.clean_criteria(clean["criteria"])
    if "few_shots" in clean:
        clean["few_shots"] = rules.clean_few_shots(clean["few_shots"])
    if "base_url" in clean:
        clean["base_url"] = rules.clean_base_url(str(clean["base_url"] or ""))
    if "api_key_env" in clean:
        clean["api_key_env"] = rules.clean_api_key_env(
            str(clean["api_key_env"] or ""), settings.QUORUM_MODEL_KEY_VARIABLES
        )
    if "api_key" in clean:
        clean["api_key"] = rules.clean_model_key(str(clean["api_key"] or ""))
    if "tiers" in clean:
        clean["tiers"] = rules.clean_reviewer_tiers(clean["tiers"])
    return clean


def _model_key_set(cfg: ReviewerConfig, key: str, *, actor: Any, request: Any) -> None:
    """Seal and store the reviewer's own model key ("" clears it), audited as set, rotated or
    cleared. Neither the key nor its sealed form goes into the audit payload or a log."""
    had = bool(cfg.api_key_sealed)
    if not key and not had:
        return
    action = "cleared" if not key else ("rotated" if had else "set")
    cfg.api_key_sealed = seal(key) if key else ""
    cfg.save(update_fields=["api_key_sealed", "updated_at"])
    audit_record(
        action=f"reviewers.key_{action}",
        actor=Actor.of(actor),
        workspace=cfg.workspace,
        target=Target.of(cfg),
        payload={"reviewer": cfg.key},
        request=request,
    )


def reviewer_config_update(
    *, config: ReviewerConfig, actor: Any, data: dict[str, Any], request: Any = None
) -> ReviewerConfig:
    clean = _clean_reviewer_data(data)
    if config.builtin and clean.get("base_agent", config.base_agent) != config.base_agent:
        raise RuleError("The base agent of a built-in reviewer cannot change.")
    if config.builtin and clean.get("tiers", config.tiers) != config.tiers:
        raise RuleError(
            "A built-in reviewer runs in the tiers the pipeline template gives it; "
            "disable it instead, or add a custom reviewer with the tiers you want."
        )
    key = clean.pop("api_key", None)
    with transaction.atomic(durable=True):
        cfg = ReviewerConfig.objects.select_for_update().get(pk=config.pk)
        if key is not None:
            _model_key_set(cfg, key, actor=actor, request=request)
        before = {f: getattr(cfg, f) for f in clean if getattr(cfg, f) != clean[f]}
        if not before:
            return cfg
        for field in before:
            setattr(cfg, field, clean[field])
        cfg.save()
        audit_record(
            action="reviewers.updated",
            actor=Actor.of(actor),
            workspace=cfg.workspace,
            target=Target.of(cfg),
            payload={"before": before, "after": {f: clean[f] for f in before}},
            request=request,
        )
    return cfg


def reviewer_config_create(
    *, workspace: Workspace, actor: Any, key: str, data: dict[str, Any], request: Any = None
) -> ReviewerConfig:
    key = slugify(key)[:50]
    if not key:
        raise RuleError("A reviewer needs a key (letters, digits, dashes).")
    if key in _RESERVED_KEYS or key.startswith(_RESERVED_PREFIXES):
        raise RuleError(f"The key {key!r} is the pipeline's own; choose another one.")
    clean = _clean_reviewer_data(data)
    if "base_agent" not in clean or "name" not in clean:
        raise RuleError("A custom reviewer needs a name and a base agent.")
    model_key = clean.pop("api_key", None)
    with transaction.atomic(durable=True):
        if ReviewerConfig.objects.filter(workspace=workspace, key=key).exists():
            raise RuleError(f"A reviewer with key {key!r} already exists.")
        cfg = ReviewerConfig.objects.create(workspace=workspace, key=key, builtin=False, **clean)
        if model_key:
            _model_key_set(cfg, model_key, actor=actor, request=request)
        audit_record(
            action="reviewers.created",
            actor=Actor.of(actor),
            workspace=workspace,
            target=Target.of(cfg),
            payload={"before": None, "after": {"key": key, **clean}},
            request=request,
        )
    return cfg


def reviewer_config_delete(*, config: ReviewerConfig, actor: Any, request: Any = None) -> None:
    if config.builtin:
        raise RuleError("Built-in reviewers cannot be deleted; disable them instead.")
    with transaction.atomic(durable=True):
        snapshot = {f: getattr(config, f) for f in _REVIEWER_FIELDS if f != "api_key"}
        audit_record(
            action="reviewers.deleted",
            actor=Actor.of(actor),
            workspace=config.workspace,
            target=Target.of(config),
            payload={"before": {"key": config.key, **snapshot}, "after": None},
            request=request,
        )
        config.delete()
