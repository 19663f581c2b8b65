"""Correctness after the burst: every pull request reviewed once per head, no round failed,
each push superseding its round cleanly, the fake model's calls all in the spend ledger, and
every round finding what the same change found alone."""

from __future__ import annotations

from tests.bench.burst.records import OPEN_STATES, RoundRow
from tests.bench.burst.runner import Burst, Plan


def push_clean(rows: list[RoundRow]) -> str:
    """ "" when the pull request's rounds are: one superseded by the next, which finished."""
    if len(rows) != 2:
        return f"{len(rows)} rounds"
    old, new = rows
    if old.state != "superseded" or old.superseded_by != new.pk:
        return f"first round {old.state}, superseded by {old.superseded_by}"
    if old.verdict is not None or old.error or old.lease_held or old.open_steps:
        return (
            f"superseded round left verdict={old.verdict} error={old.error[:80]!r} "
            f"lease={old.lease_held} open steps={old.open_steps}"
        )
    if new.state != "finished" or new.verdict is None:
        return f"new round {new.state} ({new.error[:80]})"
    return ""


def correctness(
    plan: Plan,
    burst: Burst,
    rows: dict[int, list[RoundRow]],
    nodes: dict[int, frozenset],
    reference: frozenset,
    calls: dict[str, int],
) -> dict:
    pushed = set(plan.pushes)
    lost = [n for n in plan.pulls if not rows.get(n) or rows[n][-1].state != "finished"]
    lost += [n for n in plan.pulls if rows.get(n) and rows[n][-1].state in OPEN_STATES]
    expected = {n: 2 if n in pushed else 1 for n in plan.pulls}
    duplicated = [n for n in plan.pulls if len(rows.get(n, [])) > expected[n]]
    heads = [
        n for n in plan.pulls if len({r.head_sha for r in rows.get(n, [])}) < len(rows.get(n, []))
    ]
    failed = [r.pk for n in plan.pulls for r in rows.get(n, []) if r.state == "failed"]
    dirty = {n: why for n in plan.pushes if (why := push_clean(rows.get(n, [])))}
    differ = [n for n, found in nodes.items() if found != reference]
    return {
        "lost": len(set(lost)),
        "lost_pull_requests": sorted(set(lost)),
        "duplicated": len(set(duplicated + heads)),
        "failed": len(failed),
        "errors": sorted({r.error[:200] for n in plan.pulls for r in rows.get(n, []) if r.error})[
            :5
        ],
        "pushes": len(plan.pushes),
        "pushed_while": sorted(f"{p.state_before}/{p.stage_before}" for p in burst.pushes),
        "pushes_clean": not dirty and len(burst.pushes) == len(plan.pushes),
        "pushes_not_clean": {str(n): why for n, why in dirty.items()},
        "model_calls_received": calls["received"],
        "model_calls_in_ledger": calls["requests"],
        "prompt_tokens_received": calls["tokens_received"],
        "prompt_tokens_in_ledger": calls["input_tokens"],
        "ledger_rows_failed": calls["failed_rows"],
        "model_calls_equal_ledger": calls["received"] == calls["requests"]
        and calls["tokens_received"] == calls["input_tokens"],
        "findings_reference": len(reference) - 1,  # without the duplicates count
        "findings_differ": sorted(differ),
        "findings_identical": not differ and len(nodes) == len(plan.pulls),
    }
