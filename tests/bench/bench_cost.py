"""Cost benchmark: `python -m tests.bench.bench_cost` (also run by `make bench`).

Reviews the sample repository (reviews/sample_repo.py) with its original request at each tier
against the fake model server, on a scratch SQLite database, and counts what every model call of
a round sent: the tool schemas and output schema as JSON, then the messages' text, the earlier
turns' tool calls and results, as a provider receives them. Characters, and o200k tokens
(reviews/agents/token_count.py: the tables ship in the bpe-openai wheel, no download).

For each tier it prints the calls by role (reviewers, panel lenses, critic, lead, follow-up), the
characters and tokens sent, the share that is tool and output schemas, how often the diff went
out, and the ratios to one single-pass reviewer (pr-agent's /review plus /improve with its
defaults: 3 calls, 24,166 characters, 5,595 tokens on the same change).

It also counts what a round costs with prefix caching, the way OpenAI applies it: a request
whose first tokens (at least 1,024) match an earlier request of the round has the common prefix,
in whole blocks of 128 tokens, read from the cache, billed here at a tenth. Anthropic caches the
same prefix where the requests mark it (reviews/agents/runtime.py).
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

from reviews.agents.token_count import token_ids  # noqa: E402
from reviews.pipeline.runner import run_inline  # noqa: E402
from reviews.sample_repo import create_sample_repository  # noqa: E402
from reviews.services.requests import review_request  # noqa: E402
from tests.fakes.model_server import FakeModelServer, RecordedRequest  # noqa: E402
from tests.reviews import pipeline_scenarios as scenario  # noqa: E402
from workspaces.models import Repository  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

SINGLE_PASS_CHARS = 24_166  # pr-agent /review + /improve on the same change
SINGLE_PASS_TOKENS = 5_595  # the same, in o200k tokens
GOALS = {"light": 1.2, "balanced": 2.0, "thorough": 3.0}  # tokens, times a single pass
CACHED_GOAL = 1.5  # thorough, its cached prefix billed at a tenth
CACHE_MIN, CACHE_BLOCK, CACHED_PRICE = 1024, 128, 0.1  # OpenAI's prompt caching
TIERS = ("light", "balanced", "thorough")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return json.dumps(content) if content is not None else ""


def prompt_text(request: RecordedRequest) -> tuple[str, str]:
    """(what one chat completion sent, as text in the order a provider reads it: schemas,
    then messages; of which the schemas)."""
    body = request.json if isinstance(request.json, dict) else {}
    schemas = json.dumps(body["tools"]) if body.get("tools") else ""
    if body.get("response_format"):
        schemas += json.dumps(body["response_format"])
    parts = [schemas]
    for message in body.get("messages") or []:
        parts.append(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            parts.append(function.get("name", "") + function.get("arguments", ""))
    return "".join(parts), schemas


def sent(request: RecordedRequest) -> tuple[int, int]:
    """(characters sent, of which tool and output schemas) for one chat completion."""
    text, schemas = prompt_text(request)
    return len(text), len(schemas)


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def cached_tokens(requests: list[list[int]]) -> list[int]:
    """For each request (its tokens, in the order sent), how many an OpenAI-style prefix cache
    serves: its longest common prefix with an earlier request, if 1,024 tokens or more, rounded
    down to 128-token blocks."""
    cached = []
    for i, tokens in enumerate(requests):
        common = max((_common(tokens, earlier) for earlier in requests[:i]), default=0)
        cached.append(common // CACHE_BLOCK * CACHE_BLOCK if common >= CACHE_MIN else 0)
    return cached


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
            received, provider_cached = fake.tokens_received, fake.tokens_cached
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
            tokens_by_role: Counter[str] = Counter()
            tokenized = []
            for call in calls:
                chars, schema_chars = sent(call)
                total, schemas = total + chars, schemas + schema_chars
                by_role[role(call)] += 1
                chars_by_role[role(call)] += chars
                tokenized.append(token_ids(prompt_text(call)[0]))
                tokens_by_role[role(call)] += len(tokenized[-1])
            tokens = sum(len(t) for t in tokenized)
            cached = sum(cached_tokens(tokenized))
            billed = tokens - cached + round(cached * CACHED_PRICE)
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
                "tokens_sent": tokens,
                "tokens_by_role": dict(tokens_by_role),
                "tokens_cached": cached,
                "tokens_billed_with_cache": billed,
                "token_ratio": round(tokens / SINGLE_PASS_TOKENS, 2),
                "token_goal": GOALS[tier],
                "cached_ratio": round(billed / SINGLE_PASS_TOKENS, 2),
                # What the provider counted (the fake tokenizes each request as received), what it
                # read from its prefix cache over the whole run (later tiers meet earlier tiers'
                # prefixes), what the round reports (its ledger) and the reviewer streams alone.
                "tokens_received": fake.tokens_received - received,
                "provider_cached": fake.tokens_cached - provider_cached,
                "tokens_reported": review_round.stats.tokens.tokens_in,
                "tokens_in_streams": sum(s.tokens_in for s in review_round.streams.all()),
            }
    finally:
        fake.stop()
    print(json.dumps(report, indent=2))
    for tier, figures in report.items():
        print(
            f"{tier}: {figures['calls']} calls, {figures['chars_sent']:,} characters "
            f"({figures['schema_share']:.0%} schemas), diff sent {figures['diff_sent']} times, "
            f"{figures['ratio_to_single_pass']}x a single-pass reviewer; "
            f"{figures['tokens_sent']:,} tokens = {figures['token_ratio']}x "
            f"(goal {figures['token_goal']}x), {figures['tokens_billed_with_cache']:,} with the "
            f"cached prefix at a tenth = {figures['cached_ratio']}x"
            + (f" (goal {CACHED_GOAL}x)" if tier == "thorough" else "")
            + f"; {figures['tokens_received']:,} received by the provider, "
            f"{figures['tokens_reported']:,} reported by the round, "
            f"{figures['tokens_in_streams']:,} in the reviewer streams"
        )


if __name__ == "__main__":
    main()
