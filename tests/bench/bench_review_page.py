"""Guided review page benchmark: `python -m tests.bench.bench_review_page`.

Seeds two reviews through the services (never raw inserts) on a scratch SQLite database, in
this process: one with 10 findings and one with 1,000, each spread over 3 reviewer streams,
several files and all four priorities, with some peer confirmations, an axis and a verdict.
Then, as a logged-in workspace member with django.test.Client, after a warm-up request, it
measures the server time of GET /w/<slug>/reviews/<id>/ and reports for each size:
- p50 and p95 over N requests (default 30 for 10 findings, 15 for 1,000);
- the database queries of one request;
- the response size in bytes;
and checks the page's bounds (docs/architecture.md#the-guided-review-page), each PASS or FAIL:
the ratio p50(1,000) / p50(10) at most 3 (the first render holds a bounded number of cards,
so it must not grow with the findings), the page at 1,000 findings at most 250 KB, and the
same number of queries at both sizes, at most 15. The exit status is 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
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
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from reviews.domain.types import AxisName, AxisResult  # noqa: E402
from reviews.models import ReviewerStream, ReviewRound  # noqa: E402
from reviews.services.axes import axis_record  # noqa: E402
from reviews.services.node_recording import node_record  # noqa: E402
from reviews.services.nodes import node_confirm  # noqa: E402
from reviews.services.rounds import round_start  # noqa: E402
from reviews.services.spaces import pull_request_upsert, space_get_or_create  # noqa: E402
from reviews.services.verdicts import round_finalise  # noqa: E402
from tests.fixtures import node_payload  # noqa: E402
from workspaces.models import Membership, Repository, Workspace  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

STREAMS = ("implementation", "quality", "security")
FILES = 12
TYPES = ("bug", "suggestion", "recommendation", "question")
CATEGORIES = ("security", "correctness", "performance", "maintainability", "testing", "style")
SEVERITIES = ("critical", "high", "medium", "low")
CONFIRM_EVERY = 7  # about one finding in seven gets a peer confirmation

# The page's bounds: what the checks compare with.
MAX_RATIO = 3.0
MAX_BYTES = 250_000
MAX_QUERIES = 15


def seed_review(repository: Repository, *, number: int, nodes: int) -> ReviewRound:
    """A pull request with one round of `nodes` findings, an axis and a verdict."""
    pr = pull_request_upsert(
        repository=repository,
        number=number,
        base_ref="main",
        head_ref=f"feature-{number}",
        head_sha=f"{number:040x}",
        title=f"Bench pull request with {nodes} findings",
    )
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha=pr.head_sha, tier="balanced")
    streams = [
        ReviewerStream.objects.create(round=review_round, name=s, agent=s, dimension=s)
        for s in STREAMS
    ]
    recorded = []
    for i in range(nodes):
        line = 10 + (i // FILES) * 5
        payload = node_payload(
            title=f"Finding {i}: something to look at",
            type=TYPES[i % len(TYPES)],
            priority=f"P{(i * 7) % 4}",
            confidence=0.5 + (i % 50) / 100,
            triage={
                "category": CATEGORIES[i % len(CATEGORIES)],
                "severity": SEVERITIES[i % len(SEVERITIES)],
                "effort": "small",
            },
            anchor={"path": f"app/module_{i % FILES}.py", "start_line": line, "end_line": line + 2},
            body=f"Explanation of finding {i}, with a suggested change.",
        )
        result = node_record(stream=streams[i % len(streams)], payload=payload)
        assert result.node is not None, result.rejection
        recorded.append(result.node)
    for i, node in enumerate(recorded):
        if i % CONFIRM_EVERY == 0:
            peer = STREAMS[(STREAMS.index(node.stream.agent) + 1) % len(STREAMS)]
            node_confirm(node=node, by_agent=peer)
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=AxisResult.UNAVAILABLE,
        source="deterministic",
        details={"reason": "no public API found"},
    )
    round_finalise(review_round=review_round)
    return review_round


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(client: Client, url: str, requests: int) -> dict:
    warm = client.get(url)
    assert warm.status_code == 200, warm.status_code
    queries: list[str] = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    # An execute wrapper, not CaptureQueriesContext: request_started resets connection.queries.
    with connection.execute_wrapper(count):
        response = client.get(url)
    assert response.status_code == 200, response.status_code
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
    return {
        "requests": requests,
        "p50_ms": round(percentile(seconds, 0.5) * 1000, 1),
        "p95_ms": round(percentile(seconds, 0.95) * 1000, 1),
        "db_queries_per_request": len(queries),
        "response_bytes": len(response.content),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=10, help="findings in the small review")
    parser.add_argument("--large", type=int, default=1000, help="findings in the large review")
    parser.add_argument("--small-requests", type=int, default=30)
    parser.add_argument("--large-requests", type=int, default=15)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    users = get_user_model().objects
    owner = users.create_user(username="owner@example.com", email="owner@example.com")
    workspace: Workspace = workspace_create(name="Bench", owner=owner)
    member = users.create_user(username="member@example.com", email="member@example.com")
    Membership.objects.create(workspace=workspace, user=member, role="reviewer")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/bench"
    )

    started = time.perf_counter()
    small = seed_review(repository, number=1, nodes=args.small)
    large = seed_review(repository, number=2, nodes=args.large)
    seed_seconds = time.perf_counter() - started

    client = Client(HTTP_HOST="127.0.0.1")  # a host in the default ALLOWED_HOSTS
    client.force_login(member)
    base = f"/w/{workspace.slug}/reviews"
    small_report = measure(client, f"{base}/{small.space_id}/", args.small_requests)
    large_report = measure(client, f"{base}/{large.space_id}/", args.large_requests)

    ratio = round(large_report["p50_ms"] / small_report["p50_ms"], 2)
    small_q = small_report["db_queries_per_request"]
    large_q = large_report["db_queries_per_request"]
    checks = {
        "p50_ratio": (ratio, f"<= {MAX_RATIO}", ratio <= MAX_RATIO),
        f"bytes_at_{args.large}": (
            large_report["response_bytes"],
            f"<= {MAX_BYTES}",
            large_report["response_bytes"] <= MAX_BYTES,
        ),
        "queries": (
            [small_q, large_q],
            f"equal and <= {MAX_QUERIES}",
            small_q == large_q and large_q <= MAX_QUERIES,
        ),
    }
    report = {
        "debug": settings.DEBUG,
        "seed_seconds": round(seed_seconds, 1),
        f"nodes_{args.small}": small_report,
        f"nodes_{args.large}": large_report,
        "p50_ratio_large_over_small": ratio,
        "queries_equal": small_q == large_q,
        "checks": {
            name: {"value": value, "goal": goal, "result": "PASS" if ok else "FAIL"}
            for name, (value, goal, ok) in checks.items()
        },
    }
    print(json.dumps(report, indent=2))
    print(
        f"p50 {small_report['p50_ms']} ms at {args.small} findings, "
        f"{large_report['p50_ms']} ms at {args.large}: ratio {ratio} (goal <= {MAX_RATIO}) "
        f"{'PASS' if checks['p50_ratio'][2] else 'FAIL'}"
    )
    print(
        f"HTML at {args.large} findings: {large_report['response_bytes']} bytes "
        f"(goal <= {MAX_BYTES}) {'PASS' if checks[f'bytes_at_{args.large}'][2] else 'FAIL'}"
    )
    print(
        f"queries: {small_q} at {args.small}, {large_q} at {args.large} "
        f"(goal equal and <= {MAX_QUERIES}) {'PASS' if checks['queries'][2] else 'FAIL'}"
    )
    if not all(ok for _v, _g, ok in checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
