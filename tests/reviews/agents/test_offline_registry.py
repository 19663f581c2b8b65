"""One registry of offline analyzers, and every place that must know their names agrees with it."""

from __future__ import annotations

from reviews.agents.offline import ANALYZER_SCOPES, ANALYZERS
from reviews.domain.precision import ANALYZER_AGENTS, is_analyzer_agent
from reviews.pipeline import analyzer_runs
from reviews.pipeline.template import PR_REVIEW_REVIEWERS
from workspaces.services.reviewers import _RESERVED_KEYS


def test_the_pipeline_runs_the_registry_itself() -> None:
    assert analyzer_runs.ANALYZERS is ANALYZERS


def test_every_analyzer_is_named_scoped_reserved_and_in_the_template() -> None:
    assert set(ANALYZERS) == set(ANALYZER_AGENTS) == set(ANALYZER_SCOPES)
    assert all(is_analyzer_agent(name) for name in ANALYZERS)
    assert set(ANALYZERS) <= set(_RESERVED_KEYS)  # no custom reviewer can take the name
    entries = {entry.key: entry for entry in PR_REVIEW_REVIEWERS}
    for name, analyzer in ANALYZERS.items():
        assert analyzer.name == name
        assert name in entries and "tier" not in entries[name].run_when  # every tier runs it
