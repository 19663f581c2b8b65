"""The figures drawn from a run, and the issue's goals they are held to (PASS or FAIL)."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.bench.burst.clients import PageSocket
from tests.bench.burst.records import RoundRow
from tests.bench.burst.runner import Burst, Plan

TASK_DONE = re.compile(r"Task (\S+)\[[0-9a-f-]+\] succeeded in ([0-9.]+)s")
SWEPT = re.compile(r"sweeper: (\d+) stalled round\(s\) handed back")
MB = 1024 * 1024


def percentile(samples: Sequence[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def r2(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def spread(samples: Sequence[float]) -> dict[str, float | None]:
    return {
        "p50": r2(percentile(samples, 0.5)),
        "p95": r2(percentile(samples, 0.95)),
        "max": r2(max(samples, default=None)),
    }


def latencies(plan: Plan, burst: Burst, rows: dict[int, list[RoundRow]]) -> dict:
    """Each pull request's wait, from its `opened` webhook to the verdict on its last head."""
    sent = {h.number: h.sent for h in burst.hooks if h.action == "opened"}
    per_pr: dict[int, float | None] = {}
    for number in plan.pulls:
        last = rows[number][-1] if rows.get(number) else None
        done = last.verdict_at if last is not None else None
        per_pr[number] = r2(done - sent[number]) if done and number in sent else None
    ends = [r[-1].verdict_at for r in rows.values() if r and r[-1].verdict_at]
    first = min(sent.values(), default=None)
    first_ten = [v for n in plan.pulls[:10] if (v := per_pr[n]) is not None]
    untouched = [v for n, v in per_pr.items() if v is not None and n not in plan.pushes]
    pushed = [
        last.verdict_at - p.hook.sent
        for p in burst.pushes
        if rows.get(p.number) and (last := rows[p.number][-1]).verdict_at
    ]
    return {
        "drain_seconds": r2(max(ends) - first) if ends and first else None,
        "first_10_p50_seconds": r2(statistics.median(first_ten)) if first_ten else None,
        "verdict_latency_seconds": spread(untouched),
        "first_verdict_seconds": r2(min(ends) - first) if ends and first else None,
        "push_to_verdict_seconds": spread(pushed),
        "per_pr_seconds": {str(n): v for n, v in per_pr.items()},
    }


def socket_figures(burst: Burst, rows: dict[int, list[RoundRow]]) -> dict:
    pages = [s for s in burst.sockets if s.space_id is not None]
    lists = [s for s in burst.sockets if s.space_id is None]
    during: dict[int, list[int]] = defaultdict(list)  # until the drain
    final_lag: dict[int, int] = {}  # after the pages had their time to catch up
    for at, index, lag in burst.lags:
        final_lag[index] = lag
        if at <= burst.ended:
            during[index].append(lag)
    at_drain = {i: lags[-1] for i, lags in during.items()}
    delays, missing = [], 0
    for socket in pages:
        last = rows[socket.number][-1] if socket.number and rows.get(socket.number) else None
        if not socket.connected or last is None or last.finished is None:
            continue
        arrived = socket.verdict_arrival()
        if arrived is None:
            missing += 1
        else:
            delays.append(arrived - last.finished)
    return {
        "review_pages": len(pages),
        "list_pages": len(lists),
        "handshakes_failed": sum(len(s.failures) for s in burst.sockets),
        "pages_with_a_failed_handshake": sum(1 for s in burst.sockets if s.failures),
        "pages_never_connected": sum(1 for s in burst.sockets if not s.connected),
        "first_failures": sorted({f for s in burst.sockets for f in s.failures})[:3],
        "closed_by_server": burst.closed_by_server,
        "seconds_after_drain_until_pages_current": burst.caught_up,
        "versions_behind_during_burst_max": max((max(v) for v in during.values()), default=None),
        # Every 0.2 s sample of every page until the drain: how often a page was that far behind.
        "versions_behind_during_burst": {
            **spread([lag for lags in during.values() for lag in lags]),
            "samples": sum(len(lags) for lags in during.values()),
            "share_over_2": r2(
                sum(lag > 2 for lags in during.values() for lag in lags)
                / max(1, sum(len(lags) for lags in during.values()))
            ),
        },
        "versions_behind_at_drain": {
            "max": max(at_drain.values(), default=None),
            "sum": sum(at_drain.values()),
        },
        "versions_behind_at_end_max": max(final_lag.values(), default=None),
        "versions_never_received": sum(s.versions_skipped() for s in pages),
        "messages_per_review_page": r2(statistics.mean(_messages(pages))) if pages else None,
        "messages_per_list_page": r2(statistics.mean(_messages(lists))) if lists else None,
        "verdict_after_round_finished_seconds": spread(delays),
        "sockets_without_their_verdict": missing,
        "by_socket": [
            _socket_line(s, final_lag.get(burst.sockets.index(s)), burst.ended) for s in pages
        ],
    }


def _socket_line(socket: PageSocket, lag: int | None, drained: float) -> str:
    """One page's story, for reading a run: its pull request, messages received, when the
    last came (seconds before (-) or after the drain), versions behind at the end, handshakes
    that failed."""
    messages = socket.client.messages if socket.client else []
    last = f"{messages[-1][0] - drained:+.1f}s" if messages else "-"
    failed = f", {len(socket.failures)} failed handshakes" if socket.failures else ""
    return f"#{socket.number}: {len(messages)} messages, last {last}, behind {lag}{failed}"


def _messages(sockets: Iterable[PageSocket]) -> list[int]:
    return [len(s.client.messages) if s.client else 0 for s in sockets]


def http_figures(burst: Burst) -> dict:
    reads = [seconds for seconds, status in burst.reads.samples if status == 200]
    return {
        "page_reads": len(burst.reads.samples),
        "page_reads_not_200": sum(1 for _, status in burst.reads.samples if status != 200),
        "page_seconds": spread(reads),
        "webhook_answer_seconds": spread([h.seconds for h in burst.hooks]),  # the `opened` ones
        "push_webhook_answer_seconds": spread([p.hook.seconds for p in burst.pushes]),
        "webhook_statuses": sorted(
            {h.status for h in [*burst.hooks, *(p.hook for p in burst.pushes)]}
        ),
    }


def task_times(logs: Iterable[str]) -> dict[str, Any]:
    """What the workers' pool processes were held by, by task, from Celery's own `succeeded in`
    log lines (the whole run: the rounds alone too), and the rounds the sweeper handed back to
    a coordinator as stalled."""
    spent: dict[str, list[float]] = defaultdict(list)
    swept = 0
    for log in logs:
        for name, seconds in TASK_DONE.findall(log):
            spent[name].append(float(seconds))
        swept += sum(int(n) for n in SWEPT.findall(log))
    return {
        **{
            name: {"count": len(v), "seconds": round(sum(v), 1), "max_seconds": round(max(v), 2)}
            for name, v in sorted(spent.items())
        },
        "sweeper_handed_back": swept,
    }


@dataclass(frozen=True)
class Goal:
    name: str
    value: float | int | bool | None
    goal: str
    ok: bool

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.name} = {self.value} (goal {self.goal})"


def at_most(name: str, value: float | int | None, limit: float) -> Goal:
    return Goal(name, value, f"<= {limit}", value is not None and value <= limit)


def goals(report: dict) -> list[Goal]:
    lat, pages, http = report["latency"], report["live_pages"], report["http"]
    pg, ok = report["postgres"], report["correctness"]
    behind = pages["versions_behind_during_burst_max"]
    return [
        at_most("drain_seconds", lat["drain_seconds"], 40),
        at_most("first_10_p50_seconds", lat["first_10_p50_seconds"], 20),
        at_most("cpu_seconds_per_round", report["workers"]["cpu_seconds_per_round"], 0.8),
        at_most("pages_versions_behind_max", behind, 2),
        at_most(
            "verdict_on_socket_after_finish_max_seconds",
            pages["verdict_after_round_finished_seconds"]["max"],
            2,
        ),
        Goal(
            "sockets_without_their_verdict",
            pages["sockets_without_their_verdict"],
            "== 0",
            pages["sockets_without_their_verdict"] == 0,
        ),
        Goal(
            "handshakes_failed", pages["handshakes_failed"], "== 0", not pages["handshakes_failed"]
        ),
        at_most("page_p95_seconds", http["page_seconds"]["p95"], 0.5),
        at_most("pg_new_connections_per_round", pg["new_connections_per_round"], 3),
        at_most("pg_connections_peak", pg["connections_peak"], 25),
        Goal("rounds_lost", ok["lost"], "== 0", ok["lost"] == 0),
        Goal("rounds_duplicated", ok["duplicated"], "== 0", ok["duplicated"] == 0),
        Goal("rounds_failed", ok["failed"], "== 0", ok["failed"] == 0),
        Goal("pushes_superseded_cleanly", ok["pushes_clean"], "all", ok["pushes_clean"]),
        Goal(
            "model_calls_equal_ledger",
            ok["model_calls_equal_ledger"],
            "true",
            ok["model_calls_equal_ledger"],
        ),
        Goal("findings_identical", ok["findings_identical"], "true", ok["findings_identical"]),
    ]
