"""The figures a review report ends with, in words: the budget (what was spent against the cap
and what it bought), the verification panel's line, the token totals and the cost. Kept apart
from report, which lays out the findings and decisions, so each reads on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .spend import Spend, Totals, money


@dataclass(frozen=True, slots=True)
class PanelSummary:
    verified: int = 0
    filtered: int = 0
    contested: int = 0
    unverified: int = 0
    narrowed: bool = False
    skipped: bool = False
    rule_reachable: int = 0  # analyzer findings not put to lens 1


@dataclass(frozen=True, slots=True)
class BudgetSummary:
    """The token budgets the round planned within (reviews/domain/budget.py)."""

    round_budget: int
    pr_budget: int | None = None
    pr_spent_before: int = 0
    spent: int | None = None
    skipped: Sequence[str] = ()  # each skip's reason, in the planner's words


def budget_lines(budget: BudgetSummary) -> list[str]:
    """ "Budget: 40,000 tokens per round; spent 31,200; skipped:" and a line per skip."""
    text = f"Budget: {budget.round_budget:,} tokens per round"
    if budget.pr_budget is not None:
        text += f", {budget.pr_budget:,} per pull request"
        if budget.pr_spent_before:
            text += f" ({budget.pr_spent_before:,} spent by its earlier rounds)"
    if budget.spent is not None:
        text += f"; spent {budget.spent:,}"
    if not budget.skipped:
        return [text + "; nothing skipped."]
    return [text + "; skipped:", *(f"- {reason}" for reason in budget.skipped)]


def panel_line(panel: PanelSummary, findings: bool) -> str:
    if panel.skipped:
        if not findings:
            return "Verification panel: not run (no open finding)."
        return "Verification panel: not run; findings are unverified."
    text = (
        f"Verification panel: {panel.verified} verified, {panel.filtered} filtered as false "
        f"positives, {panel.contested} contested, {panel.unverified} unverified."
    )
    if panel.rule_reachable:
        text += (
            f" Lens 1 (reachability) was not asked about {panel.rule_reachable} analyzer "
            "finding(s): the rule's match stood for it; the other two lenses judged them."
        )
    if panel.narrowed:
        text += " The panel was narrowed by the cost guard (more than 25 findings)."
    return text


def tokens_line(totals: Totals) -> str:
    """ "12,345 input tokens (1,024 cached), 678 output tokens in 9 calls; $0.0123"."""
    cached = f" ({totals.cached_input_tokens:,} cached)" if totals.cached_input_tokens else ""
    line = (
        f"{totals.input_tokens:,} input tokens{cached}, {totals.output_tokens:,} output tokens "
        f"in {totals.calls} call{'s' if totals.calls != 1 else ''}"
    )
    if totals.cost is not None:
        line += f"; {money(totals.cost)}" + (" (priced models only)" if totals.unpriced else "")
    return line


def cost_lines(cost: Spend | None, pr_cost: Totals | None) -> list[str]:
    """The Cost section's lines: this round's tokens by role, the pull request's, and what
    could not be priced or was counted locally."""
    if cost is None or not cost.total.calls:
        lines = []
    else:
        lines = [f"This round: {tokens_line(cost.total)}."]
        lines += [f"- {row.key}: {tokens_line(row.totals)}" for row in cost.by_role]
    if pr_cost is not None and pr_cost.calls:
        lines.append(f"Pull request, all rounds: {tokens_line(pr_cost)}.")
    if lines:
        unpriced = sorted(
            set(cost.unpriced if cost else ()) | set(pr_cost.unpriced if pr_cost else ())
        )
        if unpriced:
            lines.append("Tokens only: no price set for " + ", ".join(unpriced) + ".")
        local = cost.total.counted_locally if cost else 0
        if local:
            lines.append(
                f"{local} call{'s' if local != 1 else ''} had no usage from the provider: "
                "counted locally (o200k) from what was sent."
            )
    return lines
