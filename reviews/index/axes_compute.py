"""Axes computed without spending tokens.

Each function returns `(AxisResult, details)`; the details are JSON-compatible and say what was
checked, so a `pass` can be read as evidence and an `unavailable` says why. Absence of evidence
never turns a gate green: an axis nothing could compute is `unavailable`, never `pass`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, Protocol

from reviews.domain.axes import clearing_steps, deterministic_axis_result
from reviews.domain.indexed_files import is_test_path, language_for
from reviews.domain.types import AxisName, AxisResult, Category, NodeView
from reviews.index.api_config import CONFIG_PATH, ApiConfig, read_api_config
from reviews.index.api_openapi import (
    UnreadableDocument,
    diff_documents,
    is_openapi_path,
    load_document,
)
from reviews.index.api_python import ApiChange, compare_python_api
from reviews.index.api_surface import SURFACE_LANGUAGES, compare_exported
from reviews.index.api_versions import IntendedBreak, intended_break, is_version_manifest

AxisOutcome = tuple[AxisResult, dict[str, Any]]

TEST_GAP_CAVEAT = (
    "Static view only: a test that reaches this code through dependency injection, factories, "
    "fixtures or dynamic dispatch is not visible here, so a listed cohort may in fact be covered; "
    "and a cohort with a test file is not proven covered either."
)


#: Code the axis cannot read an API from, by suffix, named in the details.
UNCHECKED_LANGUAGES: dict[str, str] = {
    ".kt": "Kotlin",
    ".kts": "Kotlin",
    ".scala": "Scala",
    ".rb": "Ruby",
    ".php": "PHP",
    ".cs": "C#",
    ".fs": "F#",
    ".c": "C",
    ".h": "C/C++",
    ".cc": "C++",
    ".cpp": "C++",
    ".cxx": "C++",
    ".hpp": "C++",
    ".m": "Objective-C",
    ".swift": "Swift",
    ".dart": "Dart",
    ".ex": "Elixir",
    ".exs": "Elixir",
    ".erl": "Erlang",
    ".hs": "Haskell",
    ".lua": "Lua",
    ".pl": "Perl",
    ".pm": "Perl",
    ".r": "R",
    ".clj": "Clojure",
    ".vue": "Vue",
    ".svelte": "Svelte",
    ".proto": "Protocol Buffers",
    ".graphql": "GraphQL",
    ".gql": "GraphQL",
}
_CHECKED_NAMES = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "tsx": "TypeScript",
    "go": "Go",
    "rust": "Rust",
    "java": "Java",
}


def contract_file(path: str) -> bool:
    """What `compute_api_contract` reads from each commit (`files_at_commit(include=…)`)."""
    return (
        path.endswith((".py", ".pyi"))
        or is_openapi_path(path)
        or language_for(path) in SURFACE_LANGUAGES
        or is_version_manifest(path)
        or path == CONFIG_PATH
    )


def changed_language(path: str) -> tuple[str, bool] | None:
    """(language, whether the axis reads its API) for a source file; None for anything else
    (documentation, configuration, data), which has no API of its own."""
    if is_openapi_path(path):
        return "OpenAPI", True
    if path.endswith(".pyi"):
        return "Python", True
    language = language_for(path)
    if language in _CHECKED_NAMES:
        return _CHECKED_NAMES[language], True
    name = UNCHECKED_LANGUAGES.get(PurePosixPath(path).suffix.lower())
    return (name, False) if name else None


def compute_api_contract(
    *,
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    changed: Iterable[str] | None = None,
    hold_unreadable: bool = False,
    released_files: Mapping[str, str] | None = None,
    release: str = "",
) -> AxisOutcome:
    """Public Python API (griffe), exported TS/JS and Go surface, OpenAPI documents: base vs
    head. `changed` is the change's paths (default: the files whose text differs).

    fail: something a client relies on was removed or changed; warn: only a value changed, or
    the breaks are expected (the change's manifest raises the major version, or the minor of a
    0.x), or changed files are in a language the axis cannot read (named per file; with
    `hold_unreadable`, the workspace's choice, that is unavailable instead); unavailable:
    nothing to compare; partial: a changed file could not be read (and nothing broke); pass:
    every changed file is in a language the axis reads and no public name or signature was
    removed or changed (additions are listed; they break no caller).

    `released_files` is the newest release reachable from the base (`release`, its tag): a
    name the base added since then was never released, so changing or removing it breaks
    nobody (listed as `unreleased`). Without it every name of the base counts as released.
    """
    changes: list[dict[str, str]] = []
    errors: list[str] = []
    checked: list[str] = []

    python = compare_python_api(base_files, head_files)
    if python is not None:
        checked.append("python: " + ", ".join(python.packages))
        changes.extend(_tagged("python", c) for c in python.changes)
        errors.extend(python.errors)

    if changed is None:
        changed = [p for p in {*base_files, *head_files} if base_files.get(p) != head_files.get(p)]
    changed = set(changed)

    surface = compare_exported(base_files, head_files)
    for module in surface.modules:
        checked.append(f"exports: {module}")
    changes.extend(_tagged("exports", c) for c in surface.changes)
    # A file the grammar cannot read whole is compared declaration by declaration (what it
    # could not read is `unknown`, see compare_exported): named, never "partial" for the axis.
    # One the change does not touch never decides its verdict.
    untouched_errors = [e for e in surface.errors if e.partition(":")[0] not in changed]
    unread = [e for e in surface.errors if e not in untouched_errors]

    changes.extend(_openapi_changes(base_files, head_files, checked, errors))

    languages, unchecked = _changed_languages(changed)

    config, expected = _reclassified_breaks(
        changes, base_files, head_files, released_files=released_files, release=release
    )
    details: dict[str, Any] = {
        "checked": checked,
        "changes": changes,
        "errors": errors,
        "errors_in_untouched_files": untouched_errors,
        "unread_declarations": unread,
        "languages": sorted(languages),
        "unchecked_languages": sorted(unchecked),
        "unchecked_files": {name: paths[:20] for name, paths in sorted(unchecked.items())},
    }
    result = _contract_result(
        changes, errors, unchecked, checked, languages, hold_unreadable=hold_unreadable
    )
    if result is AxisResult.PASS and unread:
        result = AxisResult.WARN  # some declarations of a changed file were not compared
    if unchecked:
        details["note"] = _unchecked_note(unchecked, hold_unreadable=hold_unreadable)
    compared_release = release if released_files is not None else None
    details.update(_break_context(expected, config, compared_release))
    details.update(_contract_explanation(result, changes, unchecked, languages))
    details["to_clear"] = clearing_steps(AxisName.API_CONTRACT, result)
    return result, details


def _openapi_changes(
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    checked: list[str],
    errors: list[str],
) -> list[dict[str, str]]:
    """The changes between the OpenAPI documents of base and head; each document read is
    added to `checked`, each that cannot be read to `errors`."""
    changes: list[dict[str, str]] = []
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
    return changes


def _changed_languages(
    changed: Iterable[str],
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The changed files by language: (the languages the axis reads, those it cannot)."""
    languages: dict[str, list[str]] = {}
    unchecked: dict[str, list[str]] = {}
    for path in sorted(set(changed)):
        found = changed_language(path)
        if found is not None:
            (languages if found[1] else unchecked).setdefault(found[0], []).append(path)
    return languages, unchecked


def _reclassified_breaks(
    changes: list[dict[str, str]],
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    *,
    released_files: Mapping[str, str] | None,
    release: str,
) -> tuple[ApiConfig, IntendedBreak | None]:
    """Breaks that break nobody, relabelled in place: what the repository declares internal,
    what was never released, and every break when the change raises the major version. Returns
    the repository's API configuration and the intended break, for the details."""
    # What the repository itself (at the base commit) says is not API: listed, never a break.
    config = read_api_config(base_files)
    unreleased = _added_since(released_files, base_files) if released_files is not None else set()
    for change in changes:
        if change["severity"] != "breaking":
            continue
        if config.is_internal(change["where"]):
            change["severity"] = "internal"
            change["message"] += f" (internal by {CONFIG_PATH})"
        elif _under(change["where"], unreleased):
            change["severity"] = "unreleased"
            change["message"] += f" (added after {release or 'the last release'}, never released)"

    expected = intended_break(base_files, head_files)
    if expected is not None:
        for change in changes:
            if change["severity"] == "breaking":
                change["severity"] = "expected"
                change["message"] += f" (expected: {expected.reason()})"
    return config, expected


def _unchecked_note(unchecked: Mapping[str, list[str]], *, hold_unreadable: bool) -> str:
    return (
        "not compared: the API of changed files in "
        + ", ".join(sorted(unchecked))
        + (
            ""
            if hold_unreadable
            else " (the workspace does not hold a change for a language the axis cannot read)"
        )
    )


def _break_context(
    expected: IntendedBreak | None, config: ApiConfig, release: str | None
) -> dict[str, Any]:
    """What decided which breaks count: the intended break, the release compared against
    (None: none was given) and the repository's own API configuration."""
    context: dict[str, Any] = {}
    if expected is not None:
        context["expected_breaks"] = expected.reason()
    if release is not None:
        context["release"] = release
    if config.declared:
        context["internal_by_repository"] = list(config.internal)
    if config.problem:
        context["config_problem"] = config.problem
    return context


def _contract_explanation(
    result: AxisResult,
    changes: list[dict[str, str]],
    unchecked: Mapping[str, list[str]],
    languages: Mapping[str, list[str]],
) -> dict[str, Any]:
    """The detail that says in words why the axis is unavailable (`reason`) or passes
    (`evidence`)."""
    explained: dict[str, Any] = {}
    if result is AxisResult.UNAVAILABLE:
        explained["reason"] = (
            "changed files in languages whose API the axis cannot read: "
            + ", ".join(sorted(unchecked))
            if unchecked
            else "no Python package, TypeScript/JavaScript, Go, Rust or Java module, or OpenAPI "
            "document in either commit"
        )
    elif result is AxisResult.PASS:
        touched = sum(len(p) for p in languages.values())
        added = sum(1 for c in changes if c["severity"] == "additive")
        explained["evidence"] = (
            f"{touched} changed source file(s), all in languages the axis reads "
            f"({', '.join(sorted(languages)) or 'none'}); no public name or signature was "
            f"removed or changed" + (f"; {added} addition(s)" if added else "")
        )
    return explained


#: Additions that are whole names (not a parameter, an overload or an enum member).
_PART_ADDITIONS = ("parameter", "overload", "enum member")


def _added_since(released: Mapping[str, str], base: Mapping[str, str]) -> set[str]:
    """The public names the base has that the release did not."""
    out: set[str] = set()
    python = compare_python_api(released, base)
    found = list(python.changes) if python is not None else []
    found += compare_exported(released, base).changes
    for change in found:
        if change.severity == "additive" and not any(p in change.message for p in _PART_ADDITIONS):
            out.add(change.where)
    return out


def _under(where: str, names: set[str]) -> bool:
    """`where` is one of `names`, or a member of one (`pkg.Cls.method` under `pkg.Cls`)."""
    return any(where == n or where.startswith((n + ".", n + ":")) for n in names)


def _contract_result(
    changes: list[dict[str, str]],
    errors: list[str],
    unchecked: Mapping[str, list[str]],
    checked: list[str],
    languages: Mapping[str, list[str]],
    *,
    hold_unreadable: bool = False,
) -> AxisResult:
    severities = {c["severity"] for c in changes}
    if "breaking" in severities:
        return AxisResult.FAIL  # a known break stands whatever else could not be read
    if (unchecked and hold_unreadable) or (not checked and not languages and not unchecked):
        return AxisResult.UNAVAILABLE
    if errors:
        return AxisResult.PARTIAL
    if unchecked or severities & {"advisory", "expected", "unknown"}:
        return AxisResult.WARN
    return AxisResult.PASS


def _tagged(source: str, change: ApiChange, *, document: str | None = None) -> dict[str, str]:
    out = {"source": source, **change.to_json()}
    if document is not None:
        out["document"] = document
    return out


class CohortPaths(Protocol):
    """What the test gap reads of a cohort: a computed one, or the summary a round stored."""

    @property
    def key(self) -> str: ...

    @property
    def paths(self) -> Sequence[str]: ...


def compute_test_gap(
    cohorts: Iterable[CohortPaths], findings: Iterable[NodeView] = ()
) -> AxisOutcome:
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
    """visual and performance: nothing in Quorum computes them (performance is
    enumeration only), so they are `unavailable` unless a result was submitted."""
    result = deterministic_axis_result(submitted)
    if submitted is None:
        reason = f"no {axis} result was submitted; nothing computes it"
        return result, {"reason": reason, "to_clear": clearing_steps(axis, result)}
    return result, {"source": "submitted"}


def compute_visual(submitted: AxisResult | None = None) -> AxisOutcome:
    return compute_submitted(AxisName.VISUAL, submitted)


def compute_performance(submitted: AxisResult | None = None) -> AxisOutcome:
    return compute_submitted(AxisName.PERFORMANCE, submitted)
