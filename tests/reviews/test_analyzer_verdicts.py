"""A pattern match holds a change; it blocks once a verifier lens confirms it (whole pipeline,
PostgreSQL, real bandit, the scripted model server for the lenses)."""

from __future__ import annotations

import pytest

from reviews.models import NodeConfirmation, ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from reviews.services.requests import review_request
from tests.fakes.gitrepo import GitRepo
from tests.fakes.model_server import good_findings
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

ACCOUNTS = """\
import subprocess


def archive(name):
    subprocess.call("tar czf backups.tgz " + name, shell=True)
"""


@pytest.fixture
def review(settings, tmp_path, workspace, alice):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    repo = GitRepo.init(tmp_path / "accounts")
    base = repo.commit("base", {"README.md": "accounts\n"})
    head = repo.commit("archive accounts", {"accounts/archive.py": ACCOUNTS})
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo.path.resolve())
    )

    def run():
        review_round = review_request(
            repository=repository, actor=alice, base=base, head=head, tier="light", queue=False
        )
        review_round = run_inline(review_round.pk)
        assert review_round.state == "finished", review_round.error
        return review_round

    return run


def _shell_node(review_round) -> ReviewNode:
    return ReviewNode.objects.get(round=review_round, title__startswith="B602")


def test_offline_an_unlisted_analyzer_p0_holds_with_the_reason(review) -> None:
    review_round = review()
    node = _shell_node(review_round)
    assert node.priority == "P0" and node.tags.analyzer.high_precision is False
    verdict = review_round.verdict
    assert verdict.level == "hold"
    assert verdict.rule.startswith("unconfirmed analyzer finding (B602)")


def test_a_lens_confirmation_turns_the_hold_into_a_block(review, settings, fake_model) -> None:
    scenario.model_settings(settings, fake_model)
    quiet = good_findings([], path="accounts/archive.py", name="impl")
    scenario.install(fake_model, overrides={"implementation": quiet})
    review_round = review()
    node = _shell_node(review_round)
    lenses = set(NodeConfirmation.objects.filter(node=node).values_list("agent", flat=True))
    # The rule's match stands for lens 1, which was not asked; lens 2 confirmed it.
    assert lenses == {"lens-false_positive", "lens-severity"}
    assert node.tags.panel == "confirmed"
    assert (
        "reachability not asked of a model: the analyzer's rule B602 matched"
        in node.tags.panel_note
    )
    reachability = [r for r in fake_model.recorded() if r.script == "lens-reachability"]
    assert all("B602" not in r.body for r in reachability)
    assert node.tags.panel_lenses == ["false_positive", "severity"]
    # The report says which lenses ran.
    skipped = review_round.stats.panel.rule_reachable
    assert skipped >= 1
    report = report_markdown(review_page(space=review_round.space))
    assert f"Lens 1 (reachability) was not asked about {skipped} analyzer finding(s)" in report
    assert review_round.verdict.level == "block"
    assert "unconfirmed" not in review_round.verdict.rule
    # The scripted severity lens calls every finding it confirms critical, so the import
    # check beside it may lead the rule; the shell call is among what decided it.
    assert str(node.pk) in review_round.verdict.contributing
