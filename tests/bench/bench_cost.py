"""Cost benchmark: `python -m tests.bench.bench_cost` (also run by `make bench`).

Reviews the sample repository (reviews/sample_repo.py) with its original request at each tier
against the fake model server, on a scratch SQLite database, and counts what every model call of
a round sent: the messages' text, the earlier turns' tool calls and results, and the tool
schemas and output schema as JSON, as a provider receives them. No tokenizer here works offline
(tiktoken downloads its encodings on first use), so the figures are characters; the reference
figures below were counted the same way.

For each tier it prints the calls by role (reviewers, panel lenses, critic, lead, follow-up), the
characters sent, the share that is tool and output schemas, how often the diff went out, and
the ratio to one single-pass reviewer (pr-agent's /review plus /improve with its defaults:
3 calls, 24,166 characters on the same change).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

SCRATCH = Path(tempfile.mkdtemp(prefix="quorum-bench-cost-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["QUORUM_VAR_DIR"] = str(SCRATCH)
for name in ("DATABASE_URL", "REDIS_URL"):
    os.environ.pop(name, None)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from reviews.pipeline.runner import run_inline  # noqa: E402
from reviews.sample_repo import create_sample_repository  # noqa: E402
from reviews.services.requests import review_request  # noqa: E402
from tests.fakes.model_server import FakeModelServer, RecordedRequest  # noqa: E402
from tests.reviews import pipeline_scenarios as scenario  # noqa: E402
from workspaces.models import Repository  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

SINGLE_PASS_CHARS = 24_166  # pr-agent /review + /improve on the same change
TIERS = ("light", "balanced", "thorough")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content) if content is not None else ""


def sent(request: RecordedRequest) -> tuple[int, int]:
    """(characters sent, of which tool and output schemas) for one chat completion."""
    body = request.json if isinstance(request.json, dict) else {}
    chars = 0
    for message in body.get("messages") or []:
        chars += len(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            chars += len(function.get("name", "")) + len(function.get("arguments", ""))
    schemas = len(json.dumps(body["tools"])) if body.get("tools") else 0
    if body.get("response_format"):
        schemas += len(json.dumps(body["response_format"]))
    return chars + schemas, schemas


def role(request: RecordedRequest) -> str:
    script = request.script or ""
    if script.startswith("lens-"):
        return "panel"
    if script in ("critic", "lead"):
        return script
    if script == "followup":
        return "follow-up"
    return "reviewers"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username="cost@example.com", email="cost@x.io")
    workspace = workspace_create(name="Cost", owner=user)
    repo_path = SCRATCH / "repos" / "shop"
    base, head = create_sample_repository(repo_path)
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo_path)
    )
    fake = FakeModelServer().start()
    settings.QUORUM_WORKTREE_ROOT = SCRATCH / "worktrees"
    scenario.model_settings(settings, fake)
    scenario.install(fake)

    report: dict[str, Any] = {}
    try:
        for tier in TIERS:
            branch = f"cost-{tier}"
            subprocess.run(["git", "branch", "-f", branch, head], cwd=repo_path, check=True)
            before = len(fake.recorded())
            review_round = run_inline(
                review_request(
                    repository=repository,
                    actor=user,
                    base=base,
                    head=branch,
                    tier=tier,
                    original_request=scenario.ORIGINAL_REQUEST,
                    queue=False,
                ).pk
            )
            assert review_round.state == "finished", review_round.error
            calls = [r for r in fake.recorded()[before:] if r.protocol == "openai"]
            # The diff's first hunk header stands for the diff: how many calls carried it.
            hunk = next(line for line in review_round.diff.splitlines() if line.startswith("@@"))
            total = schemas = 0
            by_role: Counter[str] = Counter()
            chars_by_role: Counter[str] = Counter()
            for call in calls:
                chars, schema_chars = sent(call)
                total, schemas = total + chars, schemas + schema_chars
                by_role[role(call)] += 1
                chars_by_role[role(call)] += chars
            report[tier] = {
                "calls": len(calls),
                "calls_by_role": dict(by_role),
                "chars_sent": total,
                "chars_by_role": dict(chars_by_role),
                "schema_share": round(schemas / total, 2) if total else 0.0,
                "diff_sent": sum(hunk in call.body for call in calls),
                "findings": review_round.nodes.count(),
                "verdict": review_round.verdict.level,
                "ratio_to_single_pass": round(total / SINGLE_PASS_CHARS, 1),
            }
    finally:
        fake.stop()
    print(json.dumps(report, indent=2))
    for tier, figures in report.items():
        print(
            f"{tier}: {figures['calls']} calls, {figures['chars_sent']:,} characters "
            f"({figures['schema_share']:.0%} schemas), diff sent {figures['diff_sent']} times, "
            f"{figures['ratio_to_single_pass']}x a single-pass reviewer"
        )


if __name__ == "__main__":
    main()
