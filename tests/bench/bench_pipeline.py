"""Pipeline benchmark: `python -m tests.bench.bench_pipeline` (also run by `make bench`).

Reviews the sample repository (reviews/sources/sample_repo.py) with the thorough tier against the fake
model server, in this process on a scratch SQLite database (the embedded default), and reports:
1. with a zero-latency model: seconds per round (non-model time), database queries per finding
   and the model calls made;
2. with a model whose every call takes L seconds: the wall time of a round, its critical path
   and their ratio. The critical path is drawn from the calls the fake model recorded: stages
   run one after the other, and within a stage the runs (a reviewer, a lens, the critic …) run
   side by side, each a chain of turns that wait for each other. So the path is, stage by
   stage, the longest chain of calls of one run; wall ÷ critical path is what the round costs
   beyond its model calls.
Each figure ends with its goal and PASS or FAIL.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SCRATCH = Path(tempfile.mkdtemp(prefix="quorum-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["QUORUM_VAR_DIR"] = str(SCRATCH)
for name in ("DATABASE_URL", "REDIS_URL"):
    os.environ.pop(name, None)  # the embedded default: one process, nothing shared to disturb

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402
from django.db.backends.signals import connection_created  # noqa: E402

from reviews.models import ReviewNode  # noqa: E402
from reviews.pipeline.runner import run_inline  # noqa: E402
from reviews.services.requests import review_request  # noqa: E402
from reviews.sources.sample_repo import create_sample_repository  # noqa: E402
from tests.fakes.model_server import FakeModelServer, RecordedRequest  # noqa: E402
from tests.reviews import pipeline_scenarios as scenario  # noqa: E402
from workspaces.models import Repository  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

MAX_QUERIES_PER_FINDING = 8
MAX_ROUND_SECONDS = 1.0
MAX_WALL_OVER_PATH = 1.3

_STAGE_UPDATE = 'UPDATE "reviews_reviewround" SET "stage" = '


class QueryCounter:
    """Counts queries on every connection, whichever thread opened it, and notes when the
    round enters each stage (the coordinator's one write of `ReviewRound.stage`)."""

    def __init__(self) -> None:
        self.count = 0
        self.stages: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        connection_created.connect(self._attach)
        for connection in connections.all(initialized_only=True):
            self._attach(None, connection)  # this thread's, opened by the migrations

    def _attach(self, sender, connection, **kwargs) -> None:
        # A thread's connection object outlives its closes: wrap it once, not on every reconnect.
        if self._wrap not in connection.execute_wrappers:
            connection.execute_wrappers.append(self._wrap)

    def _wrap(self, execute, sql, params, many, context):
        with self._lock:
            self.count += 1
        if sql.startswith(_STAGE_UPDATE) and params:
            with self._lock:
                self.stages.append((time.perf_counter(), str(params[0])))
        return execute(sql, params, many, context)


class FixedLatencyModel(FakeModelServer):
    """The fake model with every answer taking at least `latency` seconds, whatever the script
    (reviewers, lenses, the critic, a retry past a script's last turn alike)."""

    latency = 0.0

    def _sleep(self, seconds: float) -> None:
        super()._sleep(max(seconds, self.latency))


@dataclass(frozen=True)
class StagePath:
    stage: str
    runs: int
    calls: int
    longest_chain: int  # calls of the run that waits longest within the stage


def critical_path(
    calls: Sequence[RecordedRequest], stages: Sequence[tuple[float, str]]
) -> list[StagePath]:
    """Stage by stage (in the order the round entered them), the longest chain of sequential
    calls of one run. A call belongs to the stage the round was in when it arrived."""
    ordered = sorted(stages)
    by_stage: dict[str, Counter[str]] = defaultdict(Counter)
    for call in calls:
        stage = next((name for at, name in reversed(ordered) if at <= call.started), "?")
        by_stage[stage][call.run] += 1
    order = [name for _, name in ordered if name in by_stage]
    order += [name for name in by_stage if name not in order]
    return [
        StagePath(
            name, len(by_stage[name]), sum(by_stage[name].values()), max(by_stage[name].values())
        )
        for name in dict.fromkeys(order)
    ]


def check(value: float, goal: float) -> dict:
    return {"value": value, "goal": f"<= {goal}", "result": "PASS" if value <= goal else "FAIL"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(
        username="bench@example.com", email="bench@example.com"
    )
    workspace = workspace_create(name="Bench", owner=user)
    repo_path = SCRATCH / "repos" / "shop"
    base, head = create_sample_repository(repo_path)
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo_path)
    )
    counter = QueryCounter()
    fake = FixedLatencyModel().start()
    settings.QUORUM_WORKTREE_ROOT = SCRATCH / "worktrees"
    scenario.model_settings(settings, fake)
    scenario.install(fake)

    marks: list[float] = []  # when each round ended

    def one_round(branch: str) -> tuple[float, int, int, list[RecordedRequest], int, float]:
        subprocess.run(["git", "branch", "-f", branch, head], cwd=repo_path, check=True)
        review_round = review_request(
            repository=repository, actor=user, base=base, head=branch, tier="thorough", queue=False
        )
        calls_before, queries_before = len(fake.recorded()), counter.count
        stages_before = len(counter.stages)
        started, cpu = time.perf_counter(), time.process_time()
        review_round = run_inline(review_round.pk)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert review_round.state == "finished", review_round.error
        queries = counter.count - queries_before
        nodes = ReviewNode.objects.filter(round=review_round).count()
        marks.append(time.perf_counter())
        return elapsed, queries, nodes, fake.recorded()[calls_before:], stages_before, cpu

    one_round("bench-warm")  # imports, the code index and the worktree's first checkout
    overhead = [one_round(f"bench-{i}") for i in range(args.rounds)]
    seconds = sorted(o[0] for o in overhead)[len(overhead) // 2]
    cpu_seconds = sorted(o[5] for o in overhead)[len(overhead) // 2]
    _, queries, nodes, zero_calls, _, _ = overhead[-1]

    fake.latency = args.latency
    wall, _, _, slow_calls, stages_before, _ = one_round("bench-latency")
    fake.stop()
    entered = counter.stages[stages_before:]
    path = critical_path(slow_calls, entered)
    # How long the round stayed in each stage: against its chain of calls, what a stage costs
    # beyond its model.
    ends = [at for at, _ in entered[1:]] + [marks[-1]]
    stage_seconds = {
        name: round(end - at, 2) for (at, name), end in zip(entered, ends, strict=True)
    }
    path_calls = sum(p.longest_chain for p in path)
    per_finding = round(queries / max(nodes, 1), 1)
    ratio = round(wall / (path_calls * args.latency), 2) if path_calls else 0.0

    report = {
        "zero_latency": {
            "seconds_per_round_median": round(seconds, 3),
            # CPU of the whole process (every thread) per round: on a busy machine the wall
            # time waits for other processes, this does not.
            "cpu_seconds_per_round_median": round(cpu_seconds, 3),
            "load_average_1min": round(os.getloadavg()[0], 1),
            "findings_per_round": nodes,
            "model_calls_per_round": len(zero_calls),
            "db_queries_per_round": queries,
            "db_queries_per_finding": per_finding,
        },
        "fixed_latency": {
            "latency_seconds": args.latency,
            "model_calls": len(slow_calls),
            "wall_seconds": round(wall, 2),
            "wall_in_L": round(wall / args.latency, 1),
            "critical_path_in_L": path_calls,
            "critical_path_by_stage": {
                p.stage: {"runs": p.runs, "calls": p.calls, "longest_chain": p.longest_chain}
                for p in path
            },
            "wall_over_critical_path": ratio,
            "seconds_in_stage": stage_seconds,
        },
        "goals": {
            "db_queries_per_finding": check(per_finding, MAX_QUERIES_PER_FINDING),
            "zero_latency_seconds_per_round": check(round(seconds, 3), MAX_ROUND_SECONDS),
            "wall_over_critical_path": check(ratio, MAX_WALL_OVER_PATH),
        },
    }
    print(json.dumps(report, indent=2))
    for name, result in report["goals"].items():
        print(f"{name}: {result['value']} (goal {result['goal']}) {result['result']}")
    print(
        f"model calls: {len(slow_calls)}, wall {wall:.2f} s = {wall / args.latency:.1f} L, "
        f"critical path {path_calls} L "
        f"({' + '.join(f'{p.stage} {p.longest_chain}' for p in path)})"
    )


if __name__ == "__main__":
    main()
