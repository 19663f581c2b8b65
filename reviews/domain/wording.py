"""Stored facts put into words for a person: axis details, cohort names, times, sources.

Pure functions of plain values. The pipeline stores axis details as JSON shaped for machines
(cohort keys, tool names, severities); the review page and the approvals inbox show them through
these functions so nobody reads a Python dict, a 64-character hash or a snake_case identifier.
Nothing here reads the clock: times are compared with a `now` the caller passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .stream_states import StreamState
from .types import AxisName

# -- detail rows -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of a row's list; `anchor` is an element id on the same page ("" for none)."""

    text: str
    anchor: str = ""


@dataclass(frozen=True, slots=True)
class DetailRow:
    """(label, value in words), with an optional list folded under it on the page."""

    label: str
    value: str
    items: tuple[Item, ...] = ()


def in_words(identifier: object) -> str:
    """A stored identifier as words: "consensus_ready" → "Consensus ready";
    "testGap" → "Test gap"."""
    text = str(identifier or "")
    spaced = "".join(f" {c.lower()}" if c.isupper() and i else c for i, c in enumerate(text))
    return spaced.replace("_", " ").strip().capitalize()


def plural(count: int, word: str, many: str | None = None) -> str:
    """`plural(1, "file")` → "1 file"; `plural(3, "file")` → "3 files"."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


# -- cohorts -----------------------------------------------------------------------------------


class CohortLike(Protocol):
    """What `cohort_name` reads: a stored `CohortSummary` or the index's `Cohort`, whose
    `reading_order` steps have `path`, `symbols` and `is_test`."""

    @property
    def key(self) -> str: ...

    @property
    def paths(self) -> Sequence[str]: ...

    @property
    def symbols(self) -> Sequence[str]: ...

    @property
    def reading_order(self) -> Sequence[Any]: ...


def cohort_anchor(key: str) -> str:
    """The element id of a cohort's card on the review page."""
    return f"cohort-{key[:12]}"


def _module_of(path: str) -> str:
    """ "pkg/mod.py" → "pkg.mod" (the Python module a path holds)."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return stem.replace("/", ".").removesuffix(".__init__")


def short_symbol(qualname: str, path: str = "") -> str:
    """A symbol as a reader names it: without its module ("pkg.mod.Class.run" in pkg/mod.py →
    "Class.run") or its file ("web/app.ts:render" → "render"). A module symbol is its file."""
    if ":" in qualname:
        local = qualname.partition(":")[2]
        return local or (path.rsplit("/", 1)[-1] if path else qualname)
    if path:
        module = _module_of(path)
        parts = module.split(".")
        # The index may root modules below a source directory ("src/pkg/mod.py" → "pkg.mod").
        for start in range(len(parts)):
            prefix = ".".join(parts[start:])
            if qualname == prefix:
                return path.rsplit("/", 1)[-1]
            if qualname.startswith(prefix + "."):
                return qualname[len(prefix) + 1 :]
    return qualname


def _main_step(cohort: CohortLike) -> tuple[str, str] | None:
    """(symbol, path) a person would call the cohort by: the first changed symbol of the
    reading order outside tests, else of tests."""
    steps = list(cohort.reading_order or ())
    for want_test in (False, True):
        for step in steps:
            if bool(step.is_test) == want_test and step.symbols:
                return str(step.symbols[0]), str(step.path)
    return None


def cohort_name(cohort: CohortLike) -> str:
    """A cohort named by its main symbol and file, never by its key:
    "Cart.total in shop/cart.py, with 2 more symbols in 3 files";
    a cohort grouped by path: "notes/guide.md" or "4 files in notes/"."""
    paths = list(dict.fromkeys(cohort.paths))
    symbols = list(dict.fromkeys(cohort.symbols))
    main = _main_step(cohort)
    if main is not None:
        symbol, path = main
        name = short_symbol(symbol, path)
        text = path if name == path.rsplit("/", 1)[-1] else f"{name} in {path}"
        others = len(symbols) - 1
        extra_files = len(paths) - 1
        if others > 0 and extra_files > 0:
            text += f", with {plural(others, 'more symbol')} in {plural(len(paths), 'file')}"
        elif others > 0:
            text += f", with {plural(others, 'more symbol')}"
        elif extra_files > 0:
            text += f", and {plural(extra_files, 'more file')}"
        return text
    if not paths:
        return "an empty group"
    if len(paths) == 1:
        return paths[0]
    directories = {p.rsplit("/", 1)[0] if "/" in p else "" for p in paths}
    if len(directories) == 1:
        directory = directories.pop()
        return f"{len(paths)} files in {directory + '/' if directory else 'the top directory'}"
    return f"{paths[0]} and {plural(len(paths) - 1, 'more file')}"


def cohort_names(cohorts: Iterable[CohortLike]) -> dict[str, str]:
    """key → name, for every cohort of a round."""
    return {c.key: cohort_name(c) for c in cohorts}


# -- axes ------------------------------------------------------------------------------------

AXIS_LABELS: dict[str, str] = {
    AxisName.CORRECTNESS: "Correctness",
    AxisName.SECURITY: "Security",
    AxisName.TEST_GAP: "Test gap",
    AxisName.VISUAL: "Visual",
    AxisName.API_CONTRACT: "API contract",
    AxisName.PERFORMANCE: "Performance",
}


def axis_label(axis: str) -> str:
    return AXIS_LABELS.get(axis, in_words(axis))


# -- axis sources ------------------------------------------------------------------------------

#: What each `AxisResult.source` value means (reviews/pipeline/stages.py writes them).
AXIS_SOURCES: dict[str, str] = {
    "tokens": "from the reviewers: what the model reviewers and analyzers covered, and their "
    "findings",
    "cohorts": "computed from the change's cohorts and its test files, with no model",
    "deterministic": "computed from the code itself, with no model",
    "submitted": "sent from CI through the API",
}


def axis_source_words(source: str) -> str:
    return AXIS_SOURCES.get(source, in_words(source) or "unknown")


# -- axis details ------------------------------------------------------------------------------

_SEVERITY_WORDS = {
    "breaking": "breaks callers",
    "accepted": "a break a person accepted",
    "expected": "a break the version announces",
    "unreleased": "changed before any release",
    "internal": "internal by the repository",
    "unknown": "uncertain",
    "advisory": "a value changed",
    "additive": "added",
}
_CHECKED_KIND = {
    "python": ("Python package", "griffe"),
    "exports": ("exported names of", "tree-sitter"),
    "openapi": ("OpenAPI document", "an OpenAPI comparison"),
}
#: Keys the rows below already put into words, or that only tell machines something.
_CONSUMED = frozenset(
    {
        "reason",
        "evidence",
        "reviewers",
        "silent",
        "analyzers",
        "advisory",
        "cohorts_checked",
        "cohorts_without_tests",
        "caveat",
        "checked",
        "changes",
        "accepted",
        "errors",
        "languages",
        "unchecked_languages",
        "unchecked_files",
        "to_clear",
        "base",
        "head",
        "source",
    }
)
MAX_ITEMS = 50


def value_words(value: Any) -> str:
    """Any JSON value as one line of words (no braces, no quotes)."""
    if value is None or value == "" or value == [] or value == {}:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return "; ".join(f"{in_words(k).lower()}: {value_words(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(value_words(v) for v in value)
    return str(value)


def _items(values: Iterable[Any]) -> tuple[Item, ...]:
    return tuple(Item(value_words(v)) for v in list(values)[:MAX_ITEMS])


def _list(details: Mapping[str, Any], key: str) -> list[Any]:
    value = details.get(key)
    return list(value) if isinstance(value, list | tuple) else []


def _token_rows(details: Mapping[str, Any]) -> list[DetailRow]:
    rows = []
    reviewers = [str(r) for r in _list(details, "reviewers")]
    rows.append(
        DetailRow(
            "Model reviewers that ran",
            ", ".join(in_words(r).lower() for r in reviewers) if reviewers else "none",
        )
    )
    silent = [str(r) for r in _list(details, "silent")]
    if silent:
        rows.append(
            DetailRow(
                "Listed nothing they covered (no pass on their word)",
                ", ".join(in_words(r).lower() for r in silent),
            )
        )
    for run in _list(details, "analyzers"):
        if not isinstance(run, Mapping):
            continue
        tool = str(run.get("tool") or "an analyzer")
        checked = run.get("files_checked")
        count = checked if isinstance(checked, int) else len(_list(run, "files"))
        found = run.get("findings")
        text = f"checked {plural(count, 'changed file')}"
        if run.get("scope"):
            text += f" ({run['scope']})"
        if isinstance(found, int):
            text += f"; {plural(found, 'finding')} on this axis"
        rows.append(DetailRow(f"Tool: {tool}", text, _items(_list(run, "files"))))
    return rows


def _test_gap_rows(details: Mapping[str, Any], names: Mapping[str, str]) -> list[DetailRow]:
    rows = []
    if "cohorts_checked" in details:
        checked = details["cohorts_checked"]
        rows.append(
            DetailRow(
                "What was checked",
                f"{plural(checked, 'cohort')} that {'changes' if checked == 1 else 'change'} "
                "non-test code, each for a test file in the cohort or a testing finding on one "
                "of its files"
                if isinstance(checked, int)
                else value_words(checked),
            )
        )
    rows.append(DetailRow("Tool", "Quorum's code index (cohorts), no model"))
    if "cohorts_without_tests" in details:
        keys = [str(k) for k in _list(details, "cohorts_without_tests")]
        rows.append(
            DetailRow(
                "Cohorts with no test",
                "none" if not keys else plural(len(keys), "cohort"),
                tuple(
                    Item(names.get(k) or f"a cohort no longer shown ({k[:8]}…)", cohort_anchor(k))
                    for k in keys[:MAX_ITEMS]
                ),
            )
        )
    if details.get("advisory"):
        rows.append(DetailRow("Weight", "advisory: it informs, it never holds the verdict"))
    if details.get("caveat"):
        rows.append(DetailRow("Caveat", str(details["caveat"])))
    return rows


def _api_contract_rows(details: Mapping[str, Any]) -> list[DetailRow]:
    rows = []
    checked = [str(c) for c in _list(details, "checked")]
    if checked or "checked" in details:
        described, tools = [], []
        for entry in checked:
            kind, _, what = entry.partition(": ")
            label, tool = _CHECKED_KIND.get(kind, (in_words(kind), ""))
            described.append(Item(f"{label} {what}".strip()))
            if tool and tool not in tools:
                tools.append(tool)
        rows.append(
            DetailRow(
                "What was compared",
                "nothing: no public API was found in either commit"
                if not checked
                else "the public API at the merge base against the head",
                tuple(described[:MAX_ITEMS]),
            )
        )
        if tools:
            rows.append(DetailRow("Tool", ", ".join(tools)))
    if "changes" in details:
        changes = [c for c in _list(details, "changes") if isinstance(c, Mapping)]
        counts = {s: sum(1 for c in changes if c.get("severity") == s) for s in _SEVERITY_WORDS}
        summary = (
            ", ".join(f"{counts[s]} {s}" for s in counts if counts[s])
            or "no public name or signature was removed, changed or added"
        )
        rows.append(
            DetailRow(
                "What changed",
                summary,
                tuple(_change_item(c) for c in changes[:MAX_ITEMS]),
            )
        )
    acceptance = details.get("accepted")
    if isinstance(acceptance, Mapping):
        rows.append(
            DetailRow(
                "Accepted",
                f"by {acceptance.get('by', '?')}: {acceptance.get('reason', '')}",
                _items(_list(acceptance, "breaks")),
            )
        )
    if _list(details, "errors"):
        rows.append(
            DetailRow("Could not read", "the comparison is partial", _items(details["errors"]))
        )
    if "languages" in details:
        rows.append(DetailRow("Languages read", value_words(_list(details, "languages"))))
    unchecked = _list(details, "unchecked_languages")
    if unchecked:
        files = details.get("unchecked_files")
        listed = (
            [p for paths in files.values() if isinstance(paths, list) for p in paths]
            if isinstance(files, Mapping)
            else []
        )
        rows.append(DetailRow("Languages not read", value_words(unchecked), _items(listed)))
    if details.get("base") or details.get("head"):
        base, head = str(details.get("base") or "?"), str(details.get("head") or "?")
        rows.append(DetailRow("Commits", f"merge base {base[:10]} against head {head[:10]}"))
    return rows


def _change_item(change: Mapping[str, Any]) -> Item:
    severity = change.get("severity")
    what = _SEVERITY_WORDS.get(str(severity), value_words(severity))
    where = change.get("where") or change.get("document") or "?"
    return Item(f"{what}: {where} ({change.get('message') or ''})")


def _clearing_rows(details: Mapping[str, Any]) -> list[DetailRow]:
    steps = [s for s in _list(details, "to_clear") if isinstance(s, Mapping)]
    if not steps:
        return []
    items = tuple(
        Item(str(s.get("label") or value_words(s)) + (f" ({s['api']})" if s.get("api") else ""))
        for s in steps
    )
    return [DetailRow("To clear the gate", "any one of these", items)]


def axis_detail_rows(
    axis: str, details: Mapping[str, Any] | None, *, names: Mapping[str, str] | None = None
) -> list[DetailRow]:
    """An axis's stored details as rows of (label, value in words): what was checked, what
    changed, which tool. `names` maps cohort keys to `cohort_name`s. Keys this function does
    not know (a CI system may submit any) are shown in words too, never as a dict."""
    if not isinstance(details, Mapping):
        return []
    names = names or {}
    rows: list[DetailRow] = []
    if details.get("reason"):
        rows.append(DetailRow("Why", str(details["reason"])))
    if details.get("evidence"):
        rows.append(DetailRow("Evidence", str(details["evidence"])))
    if "reviewers" in details or "analyzers" in details:
        rows.extend(_token_rows(details))
    if axis == AxisName.TEST_GAP or "cohorts_without_tests" in details:
        rows.extend(_test_gap_rows(details, names))
    if axis == AxisName.API_CONTRACT or "checked" in details:
        rows.extend(_api_contract_rows(details))
    rows.extend(_clearing_rows(details))
    for key, value in details.items():
        if key in _CONSUMED:
            continue
        if isinstance(value, list | tuple) and len(value) > 1:
            rows.append(
                DetailRow(in_words(key), plural(len(value), "entry", "entries"), _items(value))
            )
        else:
            rows.append(DetailRow(in_words(key), value_words(value)))
    return rows


# -- reviewer streams -------------------------------------------------------------------------

STREAM_STATES: dict[str, str] = {
    StreamState.PENDING: "Queued",
    StreamState.RUNNING: "Running",
    StreamState.DONE: "Done",
    StreamState.FAILED: "Failed",
    StreamState.SKIPPED: "Skipped",
}


def stream_state_words(state: str) -> str:
    return STREAM_STATES.get(state, in_words(state))


def rejected_words(count: int, reasons: Sequence[str]) -> str:
    """What a stream's rejected count means, in one sentence."""
    if not count:
        return "none"
    kept = f"; the first {len(reasons)} reasons are listed" if 0 < len(reasons) < count else ""
    return (
        f"{plural(count, 'finding')} this reviewer reported did not match the finding format, "
        f"or pointed at a file or line that is not in the head commit: "
        f"{'it was' if count == 1 else 'they were'} not recorded{kept}"
    )


# -- times -------------------------------------------------------------------------------------

_UNITS = (
    (365 * 24 * 3600, "year"),
    (30 * 24 * 3600, "month"),
    (7 * 24 * 3600, "week"),
    (24 * 3600, "day"),
    (3600, "hour"),
    (60, "minute"),
)


def _span(seconds: float) -> str | None:
    """The largest whole unit of a span ("3 minutes"), or None under a minute."""
    for size, unit in _UNITS:
        if seconds >= size:
            return plural(int(seconds // size), unit)
    return None


def time_ago(then: datetime, now: datetime) -> str:
    """ "just now" under a minute (never "0 minutes ago"), else "3 minutes ago"."""
    span = _span((now - then).total_seconds())
    return f"{span} ago" if span else "just now"


def time_until(then: datetime, now: datetime) -> str:
    """ "in 57 minutes"; "in under a minute"; "now" once passed."""
    seconds = (then - now).total_seconds()
    if seconds <= 0:
        return "now"
    span = _span(seconds)
    return f"in {span}" if span else "in under a minute"


# -- approvals ---------------------------------------------------------------------------------

#: What a publish request's `selection` posts (reviews/sources/publish_plan.py `Selection`).
PUBLISH_SELECTIONS: dict[str, str] = {
    "all_open": "every open finding",
    "consensus": "only findings another reviewer confirmed",
}


def selection_words(selection: str) -> str:
    return PUBLISH_SELECTIONS.get(selection, in_words(selection).lower())


DISAGREEMENT_FLASHES: dict[str, str] = {
    "first": "Disagreement settled: the first reading is kept.",
    "second": "Disagreement settled: the second reading is kept.",
    "dismiss": "Disagreement dismissed: both findings are set aside, with your reason.",
}


def disagreement_flash(decision: str) -> str:
    return DISAGREEMENT_FLASHES.get(decision, "Disagreement decided.")
