"""Offline findings on real changes, labelled: how many of what Quorum reports without a model a
maintainer would act on, per rule and per language.

    python -m tests.bench.bench_offline_findings CLONES [--only NAME] [--json FILE]

CLONES holds one clone per repository of tests/bench/corpus/offline_findings.toml, named after
it (`CLONES/cobra` for spf13/cobra). Each change (a commit range) is checked out at its head in
a temporary worktree and its diff goes through every offline analyzer the pipeline runs (ruff,
bandit, the secret scanner, oxlint, ast-grep), as a round without a model would. Every finding
is looked up in the corpus by (path, rule, line): labelled `true` (worth acting on) or `noise`,
with one line why. A finding the corpus does not list is printed as `unlabelled` for a person to
judge, and counts against precision until labelled.

Prints, per language and per rule: true / noise / unlabelled; the analyzers that ran per
language; the P0/P1 findings labelled noise; and precision = true / reported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
django.setup()

from reviews.agents.offline import ANALYZERS  # noqa: E402
from reviews.sources.diffs import parse_unified_diff  # noqa: E402

CORPUS = Path(__file__).with_name("corpus") / "offline_findings.toml"


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=clone, capture_output=True, text=True, check=True
    ).stdout


def checkout(clone: Path, head: str, target: Path, changed: list[str]) -> None:
    """The head's changed files and its top-level files (the tools' configuration): what the
    analyzers read. Not a full worktree: fetched mirrors may lack their largest blobs."""
    listing = _git(clone, "ls-tree", "-r", "-z", head)
    wanted = set(changed)
    entries = []
    for record in listing.split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000" and (path in wanted or "/" not in path):
            entries.append((path, sha))
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=clone,
        input="".join(f"{sha}\n" for _, sha in entries).encode(),
        capture_output=True,
        check=True,
    ).stdout
    offset = 0
    for path, _ in entries:
        header_end = batch.index(b"\n", offset)
        header = batch[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(batch[offset : offset + size])
        offset += size + 1


def review_change(clone: Path, base: str, head: str) -> list[dict[str, Any]]:
    """Every offline analyzer's findings on base..head, as the pipeline would record them."""
    diff = _git(clone, "diff", "--no-color", "--no-ext-diff", "--find-renames", base, head)
    files = parse_unified_diff(diff)
    found: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="quorum-offline-") as scratch:
        worktree = Path(scratch) / "head"
        checkout(clone, head, worktree, [f.path for f in files if f.new_path])
        for name, analyzer in ANALYZERS.items():
            result = analyzer.run(worktree, files)
            if not result.ok:
                found.append({"analyzer": name, "error": result.error})
                continue
            if result.files_checked:
                found.append({"analyzer": name, "ran": len(result.files_checked)})
            for finding in result.findings:
                anchor = finding.payload["anchor"]
                found.append(
                    {
                        "analyzer": name,
                        "rule": finding.evidence["rule"],
                        "path": anchor["path"],
                        "lines": finding.evidence.get("lines") or [anchor["start_line"]],
                        "priority": finding.payload["priority"],
                        "title": finding.payload["title"],
                    }
                )
    return found


def _label(change: dict[str, Any], finding: dict[str, Any]) -> dict[str, Any] | None:
    for label in change.get("finding", ()):
        same = label["path"] == finding["path"] and label["rule"] == finding["rule"]
        if same and label.get("line") in (None, *finding["lines"]):
            return label
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clones", type=Path)
    parser.add_argument("--only", help="one repository name (e.g. cobra)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    corpus = tomllib.loads(CORPUS.read_text())
    by_language: dict[str, Counter[str]] = defaultdict(Counter)
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    ran: dict[str, set[str]] = defaultdict(set)
    high_noise: list[str] = []
    unlabelled: list[str] = []
    errors: list[str] = []
    for change in corpus["change"]:
        name = change["repository"].split("/")[-1]
        if args.only and name != args.only:
            continue
        clone = args.clones / name
        language = change["language"]
        for item in review_change(clone, change["base"], change["head"]):
            if "error" in item:
                errors.append(f"{name} {change['base']}..{change['head']}: {item['error']}")
                continue
            if "ran" in item:
                ran[language].add(item["analyzer"])
                continue
            label = _label(change, item)
            verdict = label["verdict"] if label else "unlabelled"
            by_language[language][verdict] += 1
            by_rule[f"{item['analyzer']}:{item['rule']}"][verdict] += 1
            where = (
                f"{name} {change['base']}..{change['head']} {item['path']}:{item['lines'][0]} "
                f"{item['rule']} {item['priority']}"
            )
            if label is None:
                unlabelled.append(f"{where} — {item['title']}")
            elif verdict == "noise" and item["priority"] in ("P0", "P1"):
                high_noise.append(f"{where} — {label['why']}")
    totals: Counter[str] = sum(by_language.values(), Counter())
    reported = sum(totals.values())
    report = {
        "changes": sum(
            1 for c in corpus["change"] if not args.only or c["repository"].endswith(args.only)
        ),
        "reported": reported,
        "true": totals["true"],
        "noise": totals["noise"],
        "unlabelled": totals["unlabelled"],
        "precision": round(totals["true"] / reported, 3) if reported else None,
        "by_language": {k: dict(v) for k, v in sorted(by_language.items())},
        "analyzers_by_language": {k: sorted(v) for k, v in sorted(ran.items())},
        "by_rule": {k: dict(v) for k, v in sorted(by_rule.items())},
        "p0_p1_noise": high_noise,
        "unlabelled_findings": unlabelled,
        "errors": errors,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
