"""Dismissal memory benchmark: does the noise a person has to dismiss fall as the team decides?

    python -m tests.bench.bench_learning [--corpus FILE] [--json FILE]

Replays tests/bench/corpus/learning.toml on a scratch SQLite database, in this process: each
round of each pull request is started through the services, every finding the corpus lists for
it is recorded on its reviewer's stream as a reviewer records it (with the code on its line, so
its fingerprint holds it), the lead pass runs (where dismissal memory applies) and the verdict
is decided. Then the people decide, as the corpus says: every noise finding still shown is
dismissed with its reason, every true one is resolved (fixed) or left.

Prints JSON, one row per round: the findings reported (and how many are noise: what a person
would dismiss without memory), those recorded dismissed by memory
(carried from an earlier round of the review, or folded by a pattern of the workspace), the
noise a person had to dismiss, the true findings shown, and any true finding memory folded.
Goals, each PASS or FAIL (exit status 1 on a FAIL): the findings a person has to dismiss fall
by at least half from the first round to the last, and memory folds no true finding.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).with_name("corpus") / "learning.toml"

#: The goal: the last round asks a person to dismiss at most this share of what the first did.
MAX_RATIO = 0.5

_SEVERITY = {"P0": "critical", "P1": "high", "P2": "medium", "P3": "low"}
_ANALYZERS = {"bandit": "security", "ruff": "quality"}


def _standalone() -> None:
    """A scratch embedded database for this process alone (as the other benches run)."""
    scratch = Path(tempfile.mkdtemp(prefix="quorum-bench-learning-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
    os.environ["QUORUM_VAR_DIR"] = str(scratch)
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load(path: Path = CORPUS) -> dict[str, Any]:
    corpus = tomllib.loads(path.read_text(encoding="utf-8"))
    for number, entry in enumerate(corpus["round"], start=1):
        for finding in entry["findings"]:
            if finding["kind"] not in corpus["kind"]:
                raise ValueError(f"round {number}: unknown kind {finding['kind']!r}")
    return corpus


def _payload(kind: dict[str, Any], finding: dict[str, Any]) -> dict[str, Any]:
    line = finding["line"]
    return {
        "reasoning": f"Reported by {kind['reviewer']} on the line the change adds.",
        "type": kind["type"],
        "priority": kind["priority"],
        "triage": {
            "category": kind["category"],
            "severity": _SEVERITY[kind["priority"]],
            "effort": "small",
        },
        "anchor": {"path": finding["path"], "start_line": line, "end_line": line},
        "confidence": 0.8,
        "title": finding["title"],
        "body": kind.get("body") or kind["title"],
    }


def replay(corpus: dict[str, Any]) -> dict[str, Any]:
    """Play every round of the corpus through the services; the figures per round."""
    from django.contrib.auth import get_user_model

    from reviews.models import ReviewerStream, ReviewNode
    from reviews.services.consolidation import round_consolidate
    from reviews.services.node_recording import Finding, node_record_many
    from reviews.services.nodes import node_dismiss, node_resolve
    from reviews.services.rounds import round_start, round_transition
    from reviews.services.spaces import pull_request_upsert, space_get_or_create
    from reviews.services.verdicts import round_finalise
    from workspaces.models import Membership, Repository, Workspace
    from workspaces.services import workspace_create

    users = get_user_model().objects
    people: dict[str, Any] = {}

    def person(name: str) -> Any:
        if name not in people:
            email = f"{name}@bench.example"
            people[name] = users.create_user(username=email, email=email)
        return people[name]

    owner = person("owner")
    workspace = workspace_create(name="Learning bench", owner=owner)
    # The verdict follows the findings alone: no axis is gated (none is computed here).
    Workspace.objects.filter(pk=workspace.pk).update(gated_axes=[])
    for name in {k.get("by", "") for k in corpus["kind"].values()} - {""}:
        Membership.objects.create(workspace=workspace, user=person(name), role="reviewer")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop"
    )

    rows = []
    for number, entry in enumerate(corpus["round"], start=1):
        pr = pull_request_upsert(
            repository=repository,
            number=entry["pull_request"],
            base_ref="main",
            head_ref=f"pr-{entry['pull_request']}",
            head_sha=entry["head"].ljust(40, "0"),
            title=f"Pull request {entry['pull_request']}",
        )
        space = space_get_or_create(pull_request=pr)
        review_round = round_start(space=space, head_sha=pr.head_sha, tier="balanced")
        round_transition(review_round, "running")

        # The head's files as far as the findings show them: the code on each finding's line.
        findings = []
        files: dict[str, dict[int, str]] = defaultdict(dict)
        for item in entry["findings"]:
            kind = corpus["kind"][item["kind"]]
            finding = {"title": kind["title"], "path": kind["path"], **item}
            files[finding["path"]][finding["line"]] = finding["code"]
            findings.append((kind, finding))

        def file_text(path: str, files: dict[str, dict[int, str]] = files) -> list[str] | None:
            lines = files.get(path)
            if lines is None:
                return None
            return [lines.get(n, "") for n in range(1, max(lines) + 1)]

        by_reviewer: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        for kind, finding in findings:
            by_reviewer[kind["reviewer"]].append((kind, finding))
        recorded: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        for reviewer, items in sorted(by_reviewer.items()):
            analyzer = reviewer in _ANALYZERS
            stream = ReviewerStream.objects.create(
                round=review_round,
                name=reviewer,
                agent=reviewer,
                dimension=_ANALYZERS.get(reviewer, reviewer),
                kind="analyzer" if analyzer else "model",
            )
            results = node_record_many(
                stream=stream,
                findings=[
                    Finding(
                        _payload(kind, finding),
                        {
                            "tool": reviewer,
                            "rule": kind["rule"],
                            "high_precision": kind["priority"] == "P0",
                        }
                        if analyzer
                        else None,
                    )
                    for kind, finding in items
                ],
                file_text=file_text,
            )
            for result, item in zip(results, items, strict=True):
                assert result.node is not None, result.rejection
                recorded[result.node.pk] = item

        round_consolidate(review_round=review_round)  # the lead pass: memory applies here
        nodes = {
            n.pk: n
            for n in ReviewNode.objects.filter(round=review_round, duplicate_of__isnull=True)
        }
        verdict = round_finalise(review_round=review_round)
        row: dict[str, Any] = {
            "round": number,
            "pull_request": entry["pull_request"],
            "review_round": review_round.number,
            "findings": len(nodes),
            "noise": sum(recorded[pk][0]["truth"] == "noise" for pk in nodes),
            "carried": 0,
            "folded_by_pattern": 0,
            "to_dismiss": 0,
            "true_shown": 0,
            "true_folded": [],
            "verdict": verdict.level,
            "verdict_rule": verdict.rule,
        }
        for pk, node in sorted(nodes.items()):
            kind, finding = recorded[pk]
            memory = node.tags.memory
            if memory is not None and node.status == "dismissed":
                row["carried" if memory.kind == "carried" else "folded_by_pattern"] += 1
                if kind["truth"] == "true":
                    row["true_folded"].append(f"{finding['path']}:{finding['line']}")
                continue
            if kind["truth"] == "noise":
                row["to_dismiss"] += 1
                reason = finding.get("reason", kind["reason"])
                node_dismiss(node=node, user=person(kind["by"]), reason=reason)
            else:
                row["true_shown"] += 1
                if kind.get("decision") == "fix":
                    node_resolve(node=node, user=owner, reason="fixed in the next push")
        round_transition(review_round, "finished")
        rows.append(row)

    first, last = rows[0]["to_dismiss"], rows[-1]["to_dismiss"]
    true_folded = sum(len(r["true_folded"]) for r in rows)
    ratio = round(last / first, 2) if first else None
    checks = {
        "to_dismiss_last_over_first": (
            ratio,
            f"<= {MAX_RATIO}",
            ratio is not None and ratio <= MAX_RATIO,
        ),
        "true_findings_folded": (true_folded, "0", true_folded == 0),
    }
    return {
        "rounds": rows,
        "to_dismiss": [r["to_dismiss"] for r in rows],
        "checks": {
            name: {"value": value, "goal": goal, "result": "PASS" if ok else "FAIL"}
            for name, (value, goal, ok) in checks.items()
        },
    }


def passed(report: dict[str, Any]) -> bool:
    return all(c["result"] == "PASS" for c in report["checks"].values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    corpus = load(args.corpus)
    _standalone()
    report = replay(corpus)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    for row in report["rounds"]:
        print(
            f"round {row['round']} (#{row['pull_request']} round {row['review_round']}): "
            f"{row['findings']} findings ({row['noise']} noise), {row['carried']} carried, "
            f"{row['folded_by_pattern']} folded by a pattern, {row['to_dismiss']} to dismiss, "
            f"{row['true_shown']} true shown, verdict {row['verdict']}"
        )
    for name, check in report["checks"].items():
        print(f"{name}: {check['value']} (goal {check['goal']}) {check['result']}")
    return 0 if passed(report) else 1


if __name__ == "__main__":
    sys.exit(main())
