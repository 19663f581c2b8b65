"""Cost benchmark: `python -m tests.bench.bench_cost` (also run by `make bench`).

Reviews the sample repository (reviews/sources/sample_repo.py) at each tier against the fake model
server, on a scratch SQLite database, and counts what every model call of a round sent: the tool
schemas and output schema as JSON, then the messages' text, the earlier turns' tool calls and
results, as a provider receives them. Characters, and o200k tokens
(reviews/agents/token_count.py: the tables ship in the bpe-openai wheel, no download).

Each tier runs with reviewers that record and close in one turn, and with reviewers that work
the way models do on real changes (tests/reviews/pipeline_scenarios.py MULTI_TURN_SCRIPTS: a
file or two read first, findings over two turns, some with parallel tool calls and some one call
per reply); both must give the same findings and verdict. Each runs without the original
request, with the sample's, and with a long pasted specification.

For each it prints the calls, the tokens sent and the ratio to one single-pass reviewer
(pr-agent's /review plus /improve with its defaults: 3 calls, 24,166 characters, 5,595 tokens on
the same change), the tokens per finding, each reviewer's turns, and what the round costs with
prefix caching at each provider's price: OpenAI's automatic cache (a request whose first tokens,
at least 1,024, match an earlier request of the round reads the common prefix, in whole blocks
of 128 tokens, billed at a tenth), and Anthropic's as the fake reports it for the same round on
its wire (reads at a tenth, writes at 1.25). It checks that every reviewer request of a round
shares a cacheable prefix with the round's first, and prints that prefix's hash.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
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
from reviews.services.requests import review_request  # noqa: E402
from reviews.sources.sample_repo import create_sample_repository  # noqa: E402
from tests.fakes.model_server import FakeModelServer, RecordedRequest  # noqa: E402
from tests.reviews import pipeline_scenarios as scenario  # noqa: E402
from workspaces.models import Repository  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

SINGLE_PASS_CHARS = 24_166  # pr-agent /review + /improve on the same change
SINGLE_PASS_TOKENS = 5_595  # the same, in o200k tokens
GOALS = {"light": 1.2, "balanced": 2.0, "thorough": 3.0}  # tokens, times a single pass
MULTI_GOALS = {"light": 1.3, "balanced": 2.2, "thorough": 3.3}  # reviewers taking turns
CACHED_GOAL = 1.2  # thorough with reviewers taking turns, its cached prefix at its price
REQUEST_GOAL = 0.15  # the original request adds at most this share
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


PRICES = {  # per input token, the uncached price = 1
    "openai": {"cached": CACHED_PRICE},  # automatic prefix caching
    "anthropic": {"cached": 0.1, "written": 1.25},  # cache reads; writes cost a quarter more
}


@dataclass
class Bench:
    """The scratch workspace and sample repository every round of the bench reviews."""

    user: Any
    repository: Repository
    repo_path: Path
    base: str
    head: str
    fake: FakeModelServer

    def review(self, tier: str, *, request: str, branch: str) -> Any:
        subprocess.run(["git", "branch", "-f", branch, self.head], cwd=self.repo_path, check=True)
        review_round = run_inline(
            review_request(
                repository=self.repository,
                actor=self.user,
                base=self.base,
                head=branch,
                tier=tier,
                original_request=request,
                queue=False,
            ).pk
        )
        assert review_round.state == "finished", review_round.error
        return review_round


def round_figures(bench: Bench, tier: str, *, multi_turn: bool, request: str = "") -> dict:
    """One round on the OpenAI wire: what it sent, what a prefix cache saves, what it found."""
    fake = bench.fake
    fake.forget_cache()
    scenario.install(fake, multi_turn=multi_turn)
    before = len(fake.recorded())
    received = fake.tokens_received
    label = f"{'multi' if multi_turn else 'one'}-{tier}-{len(request)}"
    review_round = bench.review(tier, request=request, branch=f"cost-{label}")
    calls = [r for r in fake.recorded()[before:] if r.protocol == "openai"]
    # The diff's first hunk header stands for the diff: how many calls carried it.
    hunk = next(line for line in review_round.diff.splitlines() if line.startswith("@@"))
    total = schemas = 0
    by_role: Counter[str] = Counter()
    tokens_by_role: Counter[str] = Counter()
    tokenized = []
    for call in calls:
        chars, schema_chars = sent(call)
        total, schemas = total + chars, schemas + schema_chars
        by_role[role(call)] += 1
        tokenized.append(token_ids(prompt_text(call)[0]))
        tokens_by_role[role(call)] += len(tokenized[-1])
    tokens = sum(len(t) for t in tokenized)
    cached = sum(cached_tokens(tokenized))
    billed = tokens - cached + round(cached * CACHED_PRICE)
    findings = review_round.nodes.count()
    reviewer_calls = [t for call, t in zip(calls, tokenized, strict=True) if role(call) in REVIEW]
    streams = review_round.streams.filter(kind="model")
    return {
        "calls": len(calls),
        "calls_by_role": dict(by_role),
        "chars_sent": total,
        "schema_share": round(schemas / total, 2) if total else 0.0,
        "diff_sent": sum(hunk in call.body for call in calls),
        "findings": findings,
        "finding_titles": sorted(review_round.nodes.values_list("title", flat=True)),
        "verdict": review_round.verdict.level,
        "tokens_sent": tokens,
        "tokens_by_role": dict(tokens_by_role),
        "tokens_per_finding": round(tokens / findings) if findings else None,
        "tokens_cached": cached,
        "tokens_billed_with_cache": billed,
        "token_ratio": round(tokens / SINGLE_PASS_TOKENS, 2),
        "cached_ratio": round(billed / SINGLE_PASS_TOKENS, 2),
        "reviewer_prefix": shared_prefix(reviewer_calls),
        "turns": {s.name: f"{s.turns} of {s.turn_budget}" for s in streams if s.turn_budget},
        # What the provider counted (the fake tokenizes each request as received) and what the
        # round reports (its ledger).
        "tokens_received": fake.tokens_received - received,
        "tokens_reported": review_round.stats.tokens.tokens_in,
    }


def anthropic_billed(bench: Bench, tier: str, *, multi_turn: bool) -> int:
    """The same round on Anthropic's wire, billed as Anthropic reports it: uncached input at
    full price, cache reads at a tenth, cache writes at 1.25."""
    fake = bench.fake
    fake.forget_cache()
    scenario.install(fake, multi_turn=multi_turn)
    received, read, written = fake.tokens_received, fake.tokens_cached, fake.tokens_cache_written
    label = f"anthropic-{'multi' if multi_turn else 'one'}-{tier}"
    bench.review(tier, request="", branch=f"cost-{label}")
    read, written = fake.tokens_cached - read, fake.tokens_cache_written - written
    plain = fake.tokens_received - received - read - written
    price = PRICES["anthropic"]
    return round(plain + read * price["cached"] + written * price["written"])


REVIEW = ("reviewers", "follow-up")
# The sample's request with a pasted specification after it: what the requirements check reads
# past the brief's excerpt (reviews/domain/request_excerpt.py).
LONG_REQUEST = (
    scenario.ORIGINAL_REQUEST
    + "\n"
    + "\n".join(
        f"{i}. The export lists product {i} with its price, its stock and its supplier."
        for i in range(1, 300)
    )
)


def shared_prefix(requests: list[list[int]]) -> dict[str, Any]:
    """Whether every reviewer request after the round's first shares a cacheable prefix with
    it (OpenAI: 1,024 tokens or more, whole 128-token blocks), and that prefix's hash."""
    if not requests:
        return {"requests": 0, "share_first": True, "tokens": 0, "hash": ""}
    first = requests[0]
    common = [_common(first, later) for later in requests[1:]]
    size = min(common, default=len(first)) // CACHE_BLOCK * CACHE_BLOCK
    digest = hashlib.sha256(json.dumps(first[:size]).encode()).hexdigest()[:12]
    return {
        "requests": len(requests),
        "share_first": all(c >= CACHE_MIN for c in common),
        "tokens": size,
        "hash": digest,
    }


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
    bench = Bench(user, repository, repo_path, base, head, fake)
    report: dict[str, Any] = {"one_turn": {}, "multi_turn": {}}
    try:
        for multi_turn in (False, True):
            key = "multi_turn" if multi_turn else "one_turn"
            for tier in TIERS:
                scenario.model_settings(settings, fake)
                figures = round_figures(bench, tier, multi_turn=multi_turn)
                asked = round_figures(
                    bench, tier, multi_turn=multi_turn, request=scenario.ORIGINAL_REQUEST
                )
                spec = round_figures(bench, tier, multi_turn=multi_turn, request=LONG_REQUEST)
                settings.QUORUM_LLM_PROVIDER = "anthropic"
                settings.QUORUM_LLM_BASE_URL = fake.anthropic_base_url
                anthropic = anthropic_billed(bench, tier, multi_turn=multi_turn)
                for name, run in (("with_request", asked), ("with_long_request", spec)):
                    figures[name] = {k: run[k] for k in ("calls", "tokens_sent", "token_ratio")}
                    figures[name]["over_without"] = round(
                        run["tokens_sent"] / figures["tokens_sent"] - 1, 3
                    )
                figures["anthropic_billed"] = anthropic
                figures["anthropic_ratio"] = round(anthropic / SINGLE_PASS_TOKENS, 2)
                report[key][tier] = figures
    finally:
        fake.stop()
    print(json.dumps(report, indent=2))
    one, multi = report["one_turn"], report["multi_turn"]
    for tier in TIERS:
        for name, figures, goal in (("one turn", one, GOALS), ("multi-turn", multi, MULTI_GOALS)):
            f = figures[tier]
            asked = f["with_request"]
            print(
                f"{tier}, {name}: {f['calls']} calls, {f['tokens_sent']:,} tokens = "
                f"{f['token_ratio']}x a single pass (goal {goal[tier]}x); cached prefix at the "
                f"provider's price: OpenAI {f['cached_ratio']}x, Anthropic "
                f"{f['anthropic_ratio']}x"
                + (f" (goal {CACHED_GOAL}x)" if goal is MULTI_GOALS and tier == "thorough" else "")
                + f"; with the original request {asked['tokens_sent']:,} "
                f"({asked['over_without']:+.0%}, goal {REQUEST_GOAL:+.0%}), with a "
                f"{len(LONG_REQUEST):,}-character one "
                f"{f['with_long_request']['tokens_sent']:,} "
                f"({f['with_long_request']['over_without']:+.0%}); {f['findings']} findings, "
                f"{f['tokens_per_finding']:,} tokens each; verdict {f['verdict']}; reviewer "
                f"requests share the first's prefix: {f['reviewer_prefix']['share_first']} "
                f"({f['reviewer_prefix']['tokens']:,} tokens, {f['reviewer_prefix']['hash']}); "
                f"turns {f['turns']}"
            )
    for tier in TIERS:
        same = (one[tier]["finding_titles"], one[tier]["verdict"]) == (
            multi[tier]["finding_titles"],
            multi[tier]["verdict"],
        )
        print(f"{tier}: the same findings and verdict in one turn and in several: {same}")
        assert same, f"{tier}: reviewers taking turns changed the review"
        for figures in (one[tier], multi[tier]):
            assert figures["reviewer_prefix"]["share_first"], f"{tier}: a reviewer's prefix moved"


if __name__ == "__main__":
    main()
