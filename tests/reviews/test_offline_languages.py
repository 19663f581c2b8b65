"""Offline, a Go and TypeScript pull request gets real findings and real coverage, end to end:
the pull request on the fake GitHub, the whole pipeline with no model configured (oxlint and
ast-grep as reviewer streams), the axes and the verdict, the review page a person reads, and the
review Quorum posts back to GitHub."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reviews.models import ReviewerStream, ReviewNode, ReviewRound
from reviews.pipeline.runner import run_inline
from reviews.selectors import review_page
from reviews.services.publishing import publish_review
from reviews.services.requests import review_request
from tests.fixtures import use_fake_github
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


@pytest.fixture
def reviewed(fake_github, git_repo_factory, settings, workspace, alice, tmp_path):
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    settings.QUORUM_LLM_PROVIDER = settings.QUORUM_LLM_MODEL = ""
    use_fake_github(settings, fake_github)
    repo = git_repo_factory("fetcher")
    repo.commit("base", {"README.md": "fetcher\n"}, branch="main")
    repo.commit(
        "client", {"fetch/client.go": CLIENT_GO, "web/stats.ts": STATS_TS}, branch="feature"
    )
    fake_github.add_repo("acme", "fetcher", repo.path)
    fake_github.add_pull("acme", "fetcher", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/fetcher"
    )
    review_round = run_inline(
        review_request(
            repository=repository, actor=alice, number=7, tier="balanced", queue=False
        ).pk
    )
    assert review_round.state == ReviewRound.State.FINISHED, review_round.error
    return review_round


def test_a_go_and_typescript_pull_request_is_reviewed_offline_and_published(
    reviewed, fake_github, client_for, alice
):
    streams = dict(ReviewerStream.objects.filter(round=reviewed).values_list("agent", "state"))
    assert streams.get("oxlint") == "done" and streams.get("ast-grep") == "done"
    assert "ruff" not in streams and "bandit" not in streams  # no Python in the change

    nodes = {
        n.tags.analyzer.rule: n
        for n in ReviewNode.objects.filter(round=reviewed, duplicate_of__isnull=True)
        if n.tags.analyzer
    }
    tls = nodes["go-tls-verification-off"]
    assert (tls.priority, tls.path, tls.start_line) == ("P1", "fetch/client.go", 6)
    nan = nodes["use-isnan"]
    assert (nan.priority, nan.path, nan.start_line) == ("P2", "web/stats.ts", 3)

    # Both axes have evidence now: an analyzer covered the files and found something.
    page = review_page(space=reviewed.space)
    axes = {a.axis: a.result for a in page.axes}
    assert axes["security"] == "fail" and axes["correctness"] == "warn"
    # A pattern match holds the change; it needs a confirmation to block.
    assert reviewed.verdict.level == "hold"
    assert "go-tls-verification-off" in reviewed.verdict.rule

    # The page a person opens shows both findings and the verdict's reason.
    url = reverse("reviews:detail", args=[reviewed.space.workspace.slug, reviewed.space.pk])
    html = client_for(alice).get(url).content.decode()
    assert "go-tls-verification-off" in html and "use-isnan" in html
    assert "Why:</strong> unconfirmed analyzer finding (go-tls-verification-off)" in html

    # Published to GitHub: one review, one inline comment on each line, with the fix in words.
    record = publish_review(
        space=reviewed.space, selection="all_open", approve_on_ship=True, actor=alice
    )
    assert record.state == "posted"
    [posted] = fake_github.reviews("acme", "fetcher", 7)
    comments = {(c["path"], c["line"]): c["body"] for c in posted["comments"]}
    assert set(comments) == {("fetch/client.go", 6), ("web/stats.ts", 3)}
    assert "trust the specific certificate through RootCAs" in comments[("fetch/client.go", 6)]
    assert "isNaN" in comments[("web/stats.ts", 3)]
    assert posted["commit_id"] == reviewed.head_sha
