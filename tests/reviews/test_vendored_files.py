"""Vendored, generated and minified files in a real round: one group, listed, never read line
by line (the sample repository with a vendored script, a minified one and a file its
.gitattributes marks generated, on the real pipeline against the fake model server)."""

from __future__ import annotations

import re
import subprocess

import pytest

from reviews.index.cohorts import VENDORED_LABEL
from reviews.models import ReviewerStream
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

MINIFIED_LINE = "!function(e,t){" + "var n=e.document,r=t.x;" * 80 + "}(window);"
SET_ASIDE = {
    "shop/static/jquery-1.8.1-min.js": "minified",
    "shop/static/vendor/chart.js": "vendored",
    "shop/schema_gen.py": "generated",
}


def _git(path, *args):
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


def test_someone_elses_code_is_one_group_listed_and_never_sent_or_linted(
    settings, tmp_path, workspace, fake_model, alice, client_for
):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    scenario.model_settings(settings, fake_model)
    path = tmp_path / "shop"
    base, head = create_sample_repository(path)
    _git(path, "checkout", "-q", head)
    (path / "shop/static/vendor").mkdir(parents=True)
    (path / "shop/static/jquery-1.8.1-min.js").write_text(MINIFIED_LINE + "\n")
    (path / "shop/static/vendor/chart.js").write_text("function c(a){return eval(a)}\n")
    (path / "shop/schema_gen.py").write_text("import os\nSCHEMA = os.system('ls')\n")
    (path / ".gitattributes").write_text("shop/*_gen.py linguist-generated\n")
    _git(path, "add", "-A")
    _git(path, "-c", "user.email=t@x.io", "-c", "user.name=t", "commit", "-q", "-m", "libs")
    _git(path, "checkout", "-q", "main")
    repo = Repository.objects.create(workspace=workspace, kind="local", local_path=str(path))
    scenario.install(fake_model)
    review_round = run_inline(
        review_request(
            repository=repo, actor=alice, base=base, head=head, tier="balanced", queue=False
        ).pk
    )
    assert review_round.state == "finished", review_round.error

    cohorts = review_round.stats.cohort_list
    aside = [c for c in cohorts if c.label == VENDORED_LABEL]
    assert len(aside) == 1 and set(aside[0].paths) == set(SET_ASIDE)
    assert not aside[0].previews  # listed, no diff shown
    assert cohorts[-1].label == VENDORED_LABEL  # listed last
    assert not any(set(c.paths) & set(SET_ASIDE) for c in cohorts if c.label != VENDORED_LABEL)
    assert review_round.stats.vendored == {"shop/schema_gen.py": "generated"}

    # The models were told the files exist, and not shown a line of them.
    sent = "\n".join(r.body for r in fake_model.recorded())
    assert "var n=e.document" not in sent and "eval(a)" not in sent and "os.system" not in sent
    for set_aside, kind in SET_ASIDE.items():
        assert re.search(rf"{re.escape(set_aside)}` — added, \+\d+ −0 \(not shown: {kind}\)", sent)
    # No analyzer linted them (bandit would flag os.system, oxlint eval), and no risk points
    # at them.
    flagged = review_round.nodes.filter(path__in=list(SET_ASIDE))
    assert not flagged.exists(), list(flagged.values_list("path", "title"))
    assert not any(r.where.startswith(tuple(SET_ASIDE)) for r in review_round.stats.risk_list), (
        review_round.stats.risk_list
    )
    assert ReviewerStream.objects.filter(round=review_round, state="failed").count() == 0

    page = client_for(alice).get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
    group = page.content.decode().split(VENDORED_LABEL)[1].split("</article>")[0]
    assert "Listed, not reviewed line by line" in group
    assert "var n=e.document" not in page.content.decode()
