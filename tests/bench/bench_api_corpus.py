"""Verdicts on real changes: release ranges of public repositories in five languages, reviewed
offline as a new user would (`manage.py review`, no model), compared with what a maintainer
would decide.

    python -m tests.bench.bench_api_corpus CLONES [--axis-only] [--only NAME] [--json FILE]

CLONES holds one clone per repository of tests/bench/corpus/api_changes.toml, named after it
(`CLONES/cobra` for spf13/cobra). `--axis-only` runs the apiContract axis alone (seconds);
otherwise each change gets the whole offline review. Prints each change's verdict, what decided
it, every break the axis reported, then the false Block and false Hold counts and the axis's
share of the Hold and Block verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
django.setup()

from reviews.index.axes_compute import compute_api_contract, contract_file  # noqa: E402
from reviews.index.build import files_at_commit  # noqa: E402
from reviews.sources.git_local import LocalGitSource  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).with_name("corpus") / "api_changes.toml"
STRICTNESS = {"ship": 0, "hold": 1, "block": 2}


@dataclass
class Outcome:
    repository: str
    base: str
    head: str
    expected: str
    axis: str = ""
    breaks: list[str] = field(default_factory=list)
    verdict: str = ""
    decided_by: str = ""
    seconds: float = 0.0
    error: str = ""


def axis_only(clone: Path, outcome: Outcome) -> None:
    source = LocalGitSource(str(clone))
    base = source.merge_base(outcome.base, outcome.head)
    changed = subprocess.run(
        ["git", "diff", "--name-only", base, outcome.head],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    result, details = compute_api_contract(
        base_files=files_at_commit(source, base, include=contract_file),
        head_files=files_at_commit(source, outcome.head, include=contract_file),
        changed=changed,
    )
    outcome.axis = result.value
    outcome.breaks = [
        f"{c['where']}: {c['message']}" for c in details["changes"] if c["severity"] == "breaking"
    ]


def full_review(clone: Path, outcome: Outcome, var_dir: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(QUORUM_VAR_DIR=var_dir, SECRET_KEY="bench-only-not-a-secret")
    run = subprocess.run(
        [
            *(sys.executable, "manage.py", "review", str(clone)),
            *("--base", outcome.base, "--head", outcome.head, "--format", "json"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if run.returncode not in (0, 3, 4):
        outcome.error = (run.stderr or run.stdout).strip().splitlines()[-1:][0][:300]
        return
    review = json.loads(run.stdout)
    outcome.verdict = (review.get("verdict") or {}).get("level", "")
    rule = (review.get("verdict") or {}).get("rule", "")
    for axis in review["axes"]:
        if axis["axis"] == "apiContract":
            outcome.axis = axis["result"]
            outcome.breaks = [
                f"{c['where']}: {c['message']}"
                for c in axis["details"].get("changes", [])
                if c["severity"] == "breaking"
            ]
    outcome.decided_by = "apiContract" if "apiContract" in rule else (rule[:90] or "findings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clones", type=Path)
    parser.add_argument("--axis-only", action="store_true")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--json")
    args = parser.parse_args()
    changes = tomllib.loads(CORPUS.read_text())["change"]
    outcomes: list[Outcome] = []
    var_dir = tempfile.mkdtemp(prefix="quorum-corpus-")
    for change in changes:
        name = change["repository"].split("/")[-1]
        if args.only and name not in args.only:
            continue
        outcome = Outcome(change["repository"], change["base"], change["head"], change["expected"])
        started = time.perf_counter()
        try:
            if args.axis_only:
                axis_only(args.clones / name, outcome)
            else:
                full_review(args.clones / name, outcome, var_dir)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            outcome.error = str(exc)[:300]
        outcome.seconds = time.perf_counter() - started
        outcomes.append(outcome)
        print(
            f"{outcome.repository:18} {outcome.base:>20}..{outcome.head:<20} "
            f"axis={outcome.axis:11} verdict={outcome.verdict or '-':5} "
            f"expected={outcome.expected:5} {outcome.seconds:6.1f}s "
            f"{outcome.decided_by}{outcome.error}"
        )
        for line in outcome.breaks[:10]:
            print(f"      break: {line}")
    judged = [o for o in outcomes if o.verdict]
    worse = [o for o in judged if STRICTNESS[o.verdict] > STRICTNESS[o.expected]]
    false_block = [o for o in worse if o.verdict == "block"]
    false_hold = [o for o in worse if o.verdict == "hold"]
    stopped = [o for o in judged if o.verdict in ("hold", "block")]
    by_axis = [o for o in stopped if o.decided_by == "apiContract"]
    axis_fail = [o for o in outcomes if o.axis == "fail"]
    print()
    print(
        f"changes: {len(outcomes)}, reviewed: {len(judged)}, errors: {sum(bool(o.error) for o in outcomes)}"
    )
    print(
        f"apiContract: fail on {len(axis_fail)}, results "
        + ", ".join(
            f"{r} {sum(o.axis == r for o in outcomes)}" for r in sorted({o.axis for o in outcomes})
        )
    )
    if judged:
        print(f"false Block: {len(false_block)}, false Hold: {len(false_hold)} of {len(judged)}")
        print(f"Hold/Block verdicts: {len(stopped)}, decided by apiContract: {len(by_axis)}")
    if args.json:
        Path(args.json).write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
