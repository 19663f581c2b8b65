"""Offline, a Go and TypeScript change gets real findings and real coverage: the whole pipeline
(no model configured), oxlint and ast-grep as reviewer streams, the axes, the verdict and the
report a person reads."""

from __future__ import annotations

import pytest

from reviews.models import ReviewerStream, ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.reporting import report_markdown
from reviews.selectors import review_page
from reviews.services.requests import review_request
from tests.fakes.gitrepo import GitRepo
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT_GO = """\
package fetch

import "crypto/tls"

func Config() *tls.Config {
\treturn &tls.Config{InsecureSkipVerify: true}
}
"""

STATS_TS = """\
export function mean(xs: number[]): number {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (m === NaN) { return 0 }
  return m;
}
"""


def test_a_go_and_typescript_change_is_reviewed_offline(settings, tmp_path, workspace, alice):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repo = GitRepo.init(tmp_path / "fetcher")
    base = repo.commit("base", {"README.md": "fetcher\n"})
    head = repo.commit("client", {"fetch/client.go": CLIENT_GO, "web/stats.ts": STATS_TS})
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo.path.resolve())
    )
    review_round = review_request(
        repository=repository, actor=alice, base=base, head=head, tier="balanced", queue=False
    )
    review_round = run_inline(review_round.pk)
    assert review_round.state == "finished", review_round.error

    streams = dict(ReviewerStream.objects.filter(round=review_round).values_list("agent", "state"))
    assert streams.get("oxlint") == "done" and streams.get("ast-grep") == "done"
    assert "ruff" not in streams and "bandit" not in streams  # no Python in the change

    nodes = {
        n.tags.analyzer.rule: n
        for n in ReviewNode.objects.filter(round=review_round, duplicate_of__isnull=True)
        if n.tags.analyzer
    }
    tls = nodes["go-tls-verification-off"]
    assert (tls.priority, tls.path, tls.start_line) == ("P1", "fetch/client.go", 6)
    assert nodes["use-isnan"].priority == "P2"

    # Both axes have evidence now: an analyzer covered the files and found something.
    page = review_page(space=review_round.space)
    axes = {a.axis: a.result for a in page.axes}
    assert axes["security"] == "fail" and axes["correctness"] == "warn"
    # A pattern match holds the change; it needs a confirmation to block.
    assert review_round.verdict.level == "hold"
    assert "go-tls-verification-off" in review_round.verdict.rule

    report = report_markdown(page)
    assert "InsecureSkipVerify" in report or "accepts any certificate" in report
    assert "use-isnan" in report
