"""Axes computed without spending tokens (DESIGN.md §3.6).

Each function returns `(AxisResult, details)`; the details are JSON-compatible and say what was
checked, so a `pass` can be read as evidence and an `unavailable` says why. Absence of evidence
never turns a gate green: an axis nothing could compute is `unavailable`, never `pass`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reviews.domain.axes import deterministic_axis_result
from reviews.domain.types import AxisName, AxisResult, Category, NodeView
from reviews.index.api_openapi import (
    UnreadableDocument,
    diff_documents,
    is_openapi_path,
    load_document,
)
from reviews.index.api_python import ApiChange, compare_python_api
from reviews.index.cohorts import Cohort
from reviews.index.limits import is_test_path, language_for

AxisOutcome = tuple[AxisResult, dict[str, Any]]

TEST_GAP_CAVEAT = (
    "Static view only: a test that reaches this code through dependency injection, factories, "
    "fixtures or dynamic dispatch is not visible here, so a listed cohort may in fact be covered; "
    "and a cohort with a test file is not proven covered either."
)


def contract_file(path: str) -> bool:
    """What `compute_api_contract` reads from each commit (`files_at_commit(include=…)`)."""
    return path.endswith((".py", ".pyi")) or is_openapi_path(path)


def compute_api_contract(
    *, base_files: Mapping[str, str], head_files: Mapping[str, str]
) -> AxisOutcome:
    """Public Python API (griffe) and OpenAPI documents, base vs head.

    fail: something a client relies on was removed or changed; warn: only additions;
    pass: compared and unchanged; partial: something could not be read (and nothing broke);
    unavailable: neither a Python package nor an OpenAPI document exists on either side.
    """
    changes: list[dict[str, str]] = []
    errors: list[str] = []
    checked: list[str] = []

    python = compare_python_api(base_files, head_files)
    if python is not None:
        checked.append("python: " + ", ".join(python.packages))
        changes.extend(_tagged("python", c) for c in python.changes)
        errors.extend(python.errors)

    documents = sorted(p for p in {*base_files, *head_files} if is_openapi_path(p))
    for path in documents:
        checked.append(f"openapi: {path}")
        old_text, new_text = base_files.get(path), head_files.get(path)
        if new_text is None:
            changes.append(_tagged("openapi", ApiChange("breaking", path, "document removed")))
            continue
        try:
            new_doc = load_document(path, new_text)
            if old_text is None:
                changes.append(_tagged("openapi", ApiChange("additive", path, "document added")))
                continue
            old_doc = load_document(path, old_text)
        except UnreadableDocument as exc:
            errors.append(str(exc))
            continue
        changes.extend(
            _tagged("openapi", c, document=path) for c in diff_documents(old_doc, new_doc)
        )

    details: dict[str, Any] = {"checked": checked, "changes": changes, "errors": errors}
    if not checked:
        details["reason"] = "no Python package and no OpenAPI document in either commit"
        return AxisResult.UNAVAILABLE, details
    severities = {c["severity"] for c in changes}
    if "breaking" in severities:
        return AxisResult.FAIL, details
    if errors:
        return AxisResult.PARTIAL, details
    if "additive" in severities:
        return AxisResult.WARN, details
    return AxisResult.PASS, details


def _tagged(source: str, change: ApiChange, *, document: str | None = None) -> dict[str, str]:
    out = {"source": source, **change.to_json()}
    if document is not None:
        out["document"] = document
    return out


def compute_test_gap(cohorts: Iterable[Cohort], findings: Iterable[NodeView] = ()) -> AxisOutcome:
    """Advisory: cohorts that change non-test code with no test file in the cohort and no
    active testing finding anchored in one of its files → warn, listing their keys."""
    covered_by_finding = {
        n.path
        for n in findings
        if n.category is Category.TESTING and n.active and n.duplicate_of is None and n.path
    }
    gaps: list[str] = []
    considered = 0
    for cohort in cohorts:
        code = [p for p in cohort.paths if language_for(p) is not None and not is_test_path(p)]
        if not code:
            continue
        considered += 1
        if any(is_test_path(p) for p in cohort.paths):
            continue
        if any(p in covered_by_finding for p in cohort.paths):
            continue
        gaps.append(cohort.key)
    details: dict[str, Any] = {
        "advisory": True,
        "cohorts_checked": considered,
        "cohorts_without_tests": gaps,
        "caveat": TEST_GAP_CAVEAT,
    }
    return (AxisResult.WARN if gaps else AxisResult.PASS), details


def compute_submitted(axis: AxisName, submitted: AxisResult | None = None) -> AxisOutcome:
    """visual and performance: nothing in Quorum computes them (§3.6 — performance is
    enumeration only), so they are `unavailable` unless a result was submitted."""
    result = deterministic_axis_result(submitted)
    if submitted is None:
        return result, {"reason": f"no {axis} result was submitted; nothing computes it"}
    return result, {"source": "submitted"}


def compute_visual(submitted: AxisResult | None = None) -> AxisOutcome:
    return compute_submitted(AxisName.VISUAL, submitted)


def compute_performance(submitted: AxisResult | None = None) -> AxisOutcome:
    return compute_submitted(AxisName.PERFORMANCE, submitted)
