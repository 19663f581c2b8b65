"""The dismissal memory benchmark keeps working: it replays a tiny corpus, and the committed
corpus still meets its goals (tests/bench/bench_learning.py, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from tests.bench.bench_learning import CORPUS, load, passed, replay

pytestmark = pytest.mark.django_db

TINY = """
[kind.jitter]
reviewer = "bandit"
rule = "B311"
path = "app/retry.py"
title = "B311: Standard pseudo-random generators are not suitable for security purposes."
category = "security"
priority = "P3"
type = "recommendation"
truth = "noise"
by = "ana"
reason = "False positive: a retry's jitter"

[kind.typo]
reviewer = "ruff"
rule = "F821"
path = "app/retry.py"
title = "F821: Undefined name `attemps`"
category = "correctness"
priority = "P1"
type = "bug"
truth = "true"
decision = "fix"

[[round]]
pull_request = 7
head = "7a"
findings = [
  { kind = "jitter", line = 4, code = "    delay = random.random()" },
  { kind = "typo", line = 6, code = "    if attemps > 3:" },
]

[[round]]
pull_request = 7
head = "7b"
findings = [{ kind = "jitter", line = 5, code = "    delay = random.random()" }]
"""


def test_a_tiny_corpus_replays(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    report = replay(load(path))
    first, second = report["rounds"]
    assert (first["findings"], first["to_dismiss"], first["true_shown"]) == (2, 1, 1)
    assert first["verdict"] == "hold"  # the undefined name
    assert (second["findings"], second["carried"], second["to_dismiss"]) == (1, 1, 0)
    assert second["verdict"] == "ship"
    assert report["to_dismiss"] == [1, 0] and passed(report)


def test_the_committed_corpus_meets_its_goals():
    report = replay(load(CORPUS))
    assert len(report["rounds"]) == 5
    assert passed(report), report["checks"]
