"""Pipeline benchmark: `python -m tests.bench.bench_pipeline` (also run by `make bench`).

Reviews the sample repository (reviews/sample_repo.py) with the thorough tier against the fake
model server, in this process on a scratch SQLite database, and reports:
1. overhead per round with a zero-latency model: seconds, and database queries per node;
2. with a model of fixed latency L per call: the wall time of a round as a multiple of L, next
   to the number of model calls made — parallel reviewers and lenses put the round on its
   critical path (a few L), not on the sum of all calls.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
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
from django.db.backends.signals import connection_created  # noqa: E402

from reviews.models import ReviewNode  # noqa: E402
from reviews.pipeline.runner import run_inline  # noqa: E402
from reviews.sample_repo import create_sample_repository  # noqa: E402
from reviews.services.requests import review_request  # noqa: E402
from tests.fakes.model_server import FakeModelServer  # noqa: E402
from tests.reviews import pipeline_scenarios as scenario  # noqa: E402
from workspaces.models import Repository  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402


class QueryCounter:
    """Counts queries on every connection, whichever thread opened it."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        connection_created.connect(self._attach)

    def _attach(self, sender, connection, **kwargs) -> None:
        connection.execute_wrappers.append(self._wrap)

    def _wrap(self, execute, sql, params, many, context):
        with self._lock:
            self.count += 1
        return execute(sql, params, many, context)


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
    fake = FakeModelServer().start()
    settings.QUORUM_WORKTREE_ROOT = SCRATCH / "worktrees"
    scenario.model_settings(settings, fake)

    def one_round(branch: str) -> tuple[float, int, int, int]:
        import subprocess

        subprocess.run(["git", "branch", "-f", branch, head], cwd=repo_path, check=True)
        review_round = review_request(
            repository=repository, actor=user, base=base, head=branch, tier="thorough", queue=False
        )
        calls_before, queries_before = len(fake.recorded()), counter.count
        started = time.perf_counter()
        review_round = run_inline(review_round.pk)
        elapsed = time.perf_counter() - started
        assert review_round.state == "finished", review_round.error
        nodes = ReviewNode.objects.filter(round=review_round).count()
        return elapsed, counter.count - queries_before, nodes, len(fake.recorded()) - calls_before

    scenario.install(fake)
    overhead = [one_round(f"bench-{i}") for i in range(args.rounds)]
    seconds = sorted(o[0] for o in overhead)[len(overhead) // 2]
    queries, nodes, calls = overhead[-1][1], overhead[-1][2], overhead[-1][3]

    fake._routes.clear()  # same scripts, now every model call takes `latency` seconds
    scenario.install(fake, latency=args.latency)
    wall, _, _, slow_calls = one_round("bench-latency")
    fake.stop()

    report = {
        "zero_latency": {
            "seconds_per_round_median": round(seconds, 3),
            "nodes_per_round": nodes,
            "model_calls_per_round": calls,
            "db_queries_per_round": queries,
            "db_queries_per_node": round(queries / max(nodes, 1), 1),
        },
        "fixed_latency": {
            "latency_seconds": args.latency,
            "model_calls": slow_calls,
            "wall_seconds": round(wall, 2),
            "wall_in_L": round(wall / args.latency, 1),
            "sum_of_calls_in_L": slow_calls,
            "parallel_speedup": round(slow_calls * args.latency / wall, 1),
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
