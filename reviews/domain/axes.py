"""Review axes and how they tighten a verdict.

- Token axes (correctness, security, testGap) come from the reviewers' findings. They are
  advisory: node priorities already drive the verdict, gating them again would count twice. A
  token axis is `pass` only when a reviewer of its dimension ran *and* listed what it covered
  in its structured closing answer (reviews/domain/closings.py `coverage_statement`); silence,
  or a closing in prose only, is not validation.
- An offline analyzer that ran over changed files is explicit coverage of its axes (bandit and
  the secret scanner: security; ruff: correctness, for the rules it runs): what it checked is
  its statement of coverage. An analyzer that checked no file covers nothing. The details of a
  token axis name each tool and the files it covered (`token_axes_detailed`).
- Deterministic axes (visual, apiContract, performance) are computed without tokens; which of
  them gate is a workspace setting. performance is enumerated only: `unavailable` unless a
  result was submitted.
- Only pass and warn clear a gate: a gated `fail` forces Block, a gated `partial` or
  `unavailable` forces at least Hold. Axes never make a verdict more lenient.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .types import AxisName, AxisResult, Category, Dimension, NodeView, VerdictLevel

CLEARS_GATE = frozenset({AxisResult.PASS, AxisResult.WARN})


@dataclass(frozen=True, slots=True)
class TokenAxis:
    """Which reviewer dimensions speak for a token axis, and which finding categories count
    on it."""

    dimensions: frozenset[Dimension]
    categories: frozenset[Category]


#: The token axes, from the reviewers' findings: the one table of them.
TOKEN_AXES: dict[AxisName, TokenAxis] = {
    AxisName.CORRECTNESS: TokenAxis(
        dimensions=frozenset({Dimension.IMPLEMENTATION, Dimension.QUALITY, Dimension.ARCHITECTURE}),
        categories=frozenset({Category.CORRECTNESS, Category.STABILITY}),
    ),
    AxisName.SECURITY: TokenAxis(
        dimensions=frozenset({Dimension.SECURITY}), categories=frozenset({Category.SECURITY})
    ),
    AxisName.TEST_GAP: TokenAxis(
        dimensions=frozenset({Dimension.QUALITY}), categories=frozenset({Category.TESTING})
    ),
}

#: The deterministic axes, computed or submitted without tokens: the one table of them, in the
#: order a finishing round records them, each with why it is unavailable when nothing computed
#: it and nothing was submitted (`deterministic_axes`).
DETERMINISTIC_AXES: dict[AxisName, str] = {
    AxisName.VISUAL: "no visual result was submitted for this round",
    AxisName.PERFORMANCE: "performance is enumeration only: nothing computes it unless submitted",
    AxisName.API_CONTRACT: "no code index for this round: the API contract was not computed",
}


def gating_axes(configured: Iterable[AxisName]) -> frozenset[AxisName]:
    """The axes that actually gate: token axes are dropped whatever the setting says."""
    return frozenset(configured) & frozenset(DETERMINISTIC_AXES)


def token_axis_result(
    *, reviewer_ran: bool, coverage_note: str | None, findings: Iterable[NodeView]
) -> AxisResult:
    """One token axis from its reviewers and its active findings.

    no reviewer ran → unavailable; an active P0/P1 → fail; other findings → warn; no finding and
    a coverage note → pass; no finding and no note → partial (it ran, but said nothing).
    """
    if not reviewer_ran:
        return AxisResult.UNAVAILABLE
    ranks = [n.priority.rank for n in findings if n.active and n.duplicate_of is None]
    if any(rank <= 1 for rank in ranks):
        return AxisResult.FAIL
    if ranks:
        return AxisResult.WARN
    if coverage_note and coverage_note.strip():
        return AxisResult.PASS
    return AxisResult.PARTIAL


def token_axes(
    *, coverage: Mapping[Dimension, str | None], nodes: Iterable[NodeView]
) -> dict[AxisName, AxisResult]:
    """All token axes. `coverage` has one key per dimension that ran (value: the areas its
    closing listed as covered, None when it listed none)."""
    node_list = list(nodes)
    results = {}
    for axis in sorted(TOKEN_AXES):
        dimensions = TOKEN_AXES[axis].dimensions
        notes = [coverage[d] for d in sorted(dimensions) if coverage.get(d)]
        results[axis] = token_axis_result(
            reviewer_ran=any(d in coverage for d in dimensions),
            coverage_note="; ".join(n for n in notes if n) or None,
            findings=[n for n in node_list if n.category in TOKEN_AXES[axis].categories],
        )
    return results


@dataclass(frozen=True, slots=True)
class AnalyzerRun:
    """An offline analyzer that finished: which axes it speaks for and what it checked."""

    tool: str
    axes: frozenset[AxisName]
    files: tuple[str, ...]
    scope: str = ""  # what it looks for, e.g. "ruff rules F, E9, E722, B, PLE"


MAX_LISTED_FILES = 50


def token_axes_detailed(
    *,
    coverage: Mapping[Dimension, str | None],
    nodes: Iterable[NodeView],
    analyzers: Iterable[AnalyzerRun] = (),
) -> dict[AxisName, tuple[AxisResult, dict[str, Any]]]:
    """Token axes from model reviewers (`coverage`, as in `token_axes`) and analyzers that ran,
    each with details: the model dimensions that ran, those of them that listed nothing they
    covered (`silent`) and, per analyzer, the files it covered and how many active findings it
    raised or shares on the axis."""
    node_list = list(nodes)
    runs = [run for run in analyzers if run.files]
    results: dict[AxisName, tuple[AxisResult, dict[str, Any]]] = {}
    for axis in sorted(TOKEN_AXES):
        dimensions = TOKEN_AXES[axis].dimensions
        own = [run for run in runs if axis in run.axes]
        notes = [coverage[d] for d in sorted(dimensions) if coverage.get(d)]
        notes += [f"{run.tool} checked {len(run.files)} changed file(s)" for run in own]
        findings = [n for n in node_list if n.category in TOKEN_AXES[axis].categories]
        result = token_axis_result(
            reviewer_ran=any(d in coverage for d in dimensions) or bool(own),
            coverage_note="; ".join(n for n in notes if n) or None,
            findings=findings,
        )
        counted = [n for n in findings if n.active and n.duplicate_of is None]
        details: dict[str, Any] = {
            "reviewers": sorted(str(d) for d in dimensions if d in coverage),
            # Reviewers that ran but listed nothing they covered: they count for no pass.
            "silent": sorted(str(d) for d in dimensions if d in coverage and not coverage[d]),
            "analyzers": [
                {
                    "tool": run.tool,
                    "scope": run.scope,
                    "files": sorted(run.files)[:MAX_LISTED_FILES],
                    "files_checked": len(run.files),
                    "findings": sum(
                        1 for n in counted if run.tool in (n.stream, *n.credited_agents)
                    ),
                }
                for run in sorted(own, key=lambda r: r.tool)
            ],
        }
        if not details["reviewers"] and not details["analyzers"]:
            details["reason"] = "no reviewer or analyzer of this axis ran over the change"
        results[axis] = (result, details)
    return results


def clearing_steps(axis: AxisName, result: AxisResult) -> list[dict[str, str]]:
    """What would clear a gate this result holds (pass and warn clear it): structured, so the
    page, the report and the posted review can say why a verdict is held and what to do."""
    if result in CLEARS_GATE:
        return []
    steps = []
    if result is AxisResult.FAIL and axis is AxisName.API_CONTRACT:
        steps.append(
            {"action": "fix", "label": "restore the removed or changed public API in the change"}
        )
    steps.append(
        {
            "action": "submit",
            "label": f"submit {axis} from CI",
            "api": f"POST /api/v1/workspaces/<workspace>/reviews/<review>/axes/{axis}",
        }
    )
    steps.append(
        {
            "action": "ungate",
            "label": f"un-gate {axis} in Settings → Workspace rules",
            "setting": "gated_axes",
        }
    )
    return steps


def deterministic_axis_result(submitted: AxisResult | None) -> AxisResult:
    """Absence of evidence never turns a gate green: nothing submitted → unavailable."""
    return submitted if submitted is not None else AxisResult.UNAVAILABLE


def deterministic_axes(
    *, submitted: Collection[str], fast_exit: bool
) -> list[tuple[AxisName, AxisResult, dict[str, Any]]]:
    """The deterministic axes a finishing round records itself, given the axes already
    submitted for it (their values) and whether it was a docs-only or formatting-only change.

    visual and performance are never computed from nothing; a submitted result stays. A
    fast-exit change passes apiContract (no code, so no interface, changed); otherwise every
    axis not submitted is `unavailable` with the steps that would clear it (the pipeline
    replaces apiContract with the code index's result when it has one)."""
    done = set(submitted)
    out: list[tuple[AxisName, AxisResult, dict[str, Any]]] = []
    if fast_exit and AxisName.API_CONTRACT.value not in done:
        reason = "docs-only or formatting-only change: no code, so no API, changed"
        out.append((AxisName.API_CONTRACT, AxisResult.PASS, {"reason": reason}))
        done.add(AxisName.API_CONTRACT.value)
    for axis, reason in DETERMINISTIC_AXES.items():
        if axis.value not in done:
            steps = clearing_steps(axis, AxisResult.UNAVAILABLE)
            out.append((axis, AxisResult.UNAVAILABLE, {"reason": reason, "to_clear": steps}))
    return out


@dataclass(frozen=True, slots=True)
class AxisFloor:
    level: VerdictLevel
    rule: str


def axis_floor(
    results: Mapping[AxisName, AxisResult], *, gated: Collection[AxisName]
) -> AxisFloor | None:
    """The strictest level the gated axes impose, or None when every gate is clear.

    A gated axis missing from `results` counts as unavailable.
    """
    worst: AxisFloor | None = None
    for axis in sorted(gating_axes(gated)):
        result = results.get(axis, AxisResult.UNAVAILABLE)
        if result in CLEARS_GATE:
            continue
        if result is AxisResult.FAIL:
            floor = AxisFloor(VerdictLevel.BLOCK, f"gated axis {axis} failed")
        else:
            floor = AxisFloor(VerdictLevel.HOLD, f"gated axis {axis} is {result}")
        if worst is None or floor.level.strictness > worst.level.strictness:
            worst = floor
    return worst
