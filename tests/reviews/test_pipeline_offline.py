"""The pipeline with no model configured: offline analyzers are the reviewers."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from reviews.models import ReviewerStream, ReviewNode, ReviewRound, ReviewSpace
from reviews.sources.sample_repo import create_sample_repository

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def no_model(settings, tmp_path):
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "shop"
    base, head = create_sample_repository(path)
    # A problem that exists before the change: it must not be reported.
    return path, base, head


def _review(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("review", *args, stdout=out, stderr=io.StringIO())
    return exit_info.value.code, out.getvalue()


def test_the_command_reviews_a_local_repository_offline(no_model, sample):
    path, base, head = sample
    code, output = _review(str(path), "--base", base, "--head", head, "--format", "json")
    data = json.loads(output)
    assert data["schema"] == "quorum.review/v1"
    # The request-fed SQL string is on the high-precision list: it blocks on its own.
    assert data["verdict"]["level"] == "block" and code == 4
    assert "B608" in data["verdict"]["rule"] and "shop/search.py:12" in data["verdict"]["rule"]
    found = {(n["stream"], n["anchor"]["path"], n["anchor"]["start_line"]) for n in data["nodes"]}
    assert ("bandit", "shop/search.py", 18) in found  # shell=True on an added line
    assert ("secrets", "shop/search.py", 7) in found  # the committed API key
    # Only lines the change adds are reviewed: shop/db.py and the old views code never appear.
    assert all(n["anchor"]["path"] in {"shop/search.py", "shop/views.py"} for n in data["nodes"])
    streams = {s["name"]: s for s in data["streams"]}
    assert set(streams) == {"ruff", "bandit", "secrets"}
    assert all(s["kind"] == "analyzer" and s["state"] == "done" for s in streams.values())
    assert data["stats"]["not_covered_by_model"]
    # bandit and the secret scanner checked the changed files and found defects.
    assert {a["axis"]: a["result"] for a in data["axes"]}["security"] == "fail"
    space = ReviewSpace.objects.get()
    assert space.status == "reviewed"  # the verdict is ready; nobody asked to publish yet
    assert ReviewRound.objects.get().state == "finished"


def test_the_markdown_report_and_exit_code(no_model, sample):
    path, base, head = sample
    code, output = _review(str(path), "--base", base, "--head", head)
    assert code == 4
    assert output.startswith("# Review: BLOCKED")
    assert "Not covered" not in output  # analyzers ran; nobody failed


def test_a_docs_only_change_is_approved_without_reviewers(no_model, tmp_path):
    from tests.fakes.gitrepo import GitRepo

    repo = GitRepo.init(tmp_path / "docs")
    repo.commit("base", {"README.md": "hello\n", "app.py": "x = 1\n"}, branch="main")
    repo.commit("docs", {"README.md": "hello, world\n"}, branch="docs")
    code, output = _review(str(repo.path), "--base", "main", "--head", "docs", "--format", "json")
    assert code == 0
    data = json.loads(output)
    assert data["streams"] == [] and data["nodes"] == []
    assert data["verdict"]["state"] == "APPROVED"
    assert ReviewerStream.objects.count() == 0 and ReviewNode.objects.count() == 0
    assert data["stats"]["fast_exit_note"].startswith("Docs-only")


def test_bad_sources_fail_with_a_message(no_model, tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="neither a git repository"):
        call_command("review", str(tmp_path), "--head", "x")


def test_a_cancelled_round_stops_and_a_stuck_round_times_out(
    no_model, sample, workspace, alice, settings
):
    from datetime import timedelta

    from reviews.pipeline.runner import advance
    from reviews.services.requests import review_request
    from reviews.services.rounds import RoundError, round_cancel
    from workspaces.models import Repository

    path, base, head = sample
    settings.QUORUM_LOCAL_REPO_ROOTS = [path.parent]
    repo = Repository.objects.create(workspace=workspace, kind="local", local_path=str(path))
    cancelled = review_request(repository=repo, actor=alice, base=base, head=head, queue=False)
    round_cancel(review_round=cancelled, actor=alice)
    advance(cancelled.pk, dispatch=lambda kind, object_id: None)
    cancelled.refresh_from_db()
    assert cancelled.state == "cancelled" and cancelled.stage == ""
    with pytest.raises(RoundError, match="nothing to cancel"):
        round_cancel(review_round=cancelled, actor=alice)

    stuck = review_request(repository=repo, actor=alice, base=base, head=head, queue=False)
    ReviewRound.objects.filter(pk=stuck.pk).update(created_at=stuck.created_at - timedelta(hours=4))
    advance(stuck.pk, dispatch=lambda kind, object_id: None)
    stuck.refresh_from_db()
    assert stuck.state == "failed" and "timed out" in stuck.error


def test_offline_the_sql_injection_and_the_credential_decide_the_verdict(no_model, sample):
    """Without a model: the SQL injection and the committed credential are P1 or above by the
    severity table (the SQL injection is P0: `search_products` is called with `request.GET` in
    the change), the verdict counts them, and the security axis fails with bandit and the
    secret scanner as its evidence, each naming the files it covered."""
    from reviews.domain.verdict import finalise
    from reviews.selectors import node_view

    path, base, head = sample
    code, output = _review(str(path), "--base", base, "--head", head, "--format", "json")
    data = json.loads(output)
    nodes = {(n["stream"], n["anchor"]["start_line"]): n for n in data["nodes"]}
    sql, credential = nodes[("bandit", 12)], nodes[("secrets", 7)]
    assert sql["title"].startswith("B608") and sql["priority"] == "P0"
    assert credential["priority"] in ("P0", "P1")
    assert "search_products" in ReviewNode.objects.get(title__startswith="B608").reasoning

    verdict = data["verdict"]
    # The request-fed SQL string (high precision, confidence raised by the visible input)
    # blocks; the shell call on a plain parameter is bandit's P0 at 0.9 but only a pattern.
    assert verdict["level"] == "block" and code == 4
    assert "B608" in verdict["rule"] and "shop/search.py:12" in verdict["rule"]
    assert sql["confidence"] == 0.8
    rest = [
        node_view(n)
        for n in ReviewNode.objects.select_related("stream").exclude(title__startswith="B608")
    ]
    held = finalise(rest)
    assert held.level.value == "hold"
    assert held.rule.startswith("unconfirmed analyzer finding (B602)")
    assert "shop/search.py:18" in held.rule
    by_id = {str(n.pk): n for n in ReviewNode.objects.all()}
    deciding = {(by_id[i].stream.name, by_id[i].start_line) for i in held.contributing}
    assert {("bandit", 18), ("secrets", 7)} <= deciding

    security = next(a for a in data["axes"] if a["axis"] == "security")
    assert security["result"] == "fail"
    evidence = {a["tool"]: a for a in security["details"]["analyzers"]}
    assert set(evidence) == {"bandit", "secrets"}
    assert evidence["bandit"]["files"] == ["shop/search.py", "shop/views.py"]
    assert evidence["bandit"]["findings"] >= 2 and evidence["secrets"]["findings"] == 1
    correctness = next(a for a in data["axes"] if a["axis"] == "correctness")
    assert correctness["result"] == "pass"  # ruff ran over both files and found nothing
    assert [a["tool"] for a in correctness["details"]["analyzers"]] == ["ruff"]


def test_the_security_axis_follows_dismissals_like_the_verdict(no_model, sample, user_factory):
    """Dismissing every security finding clears the axis the analyzers failed, and the verdict
    moves with it: the token axes are recomputed after each decision, not only at the end."""
    from reviews.models import AxisResult
    from reviews.services.nodes import node_dismiss

    path, base, head = sample
    _review(str(path), "--base", base, "--head", head, "--format", "json")
    review_round = ReviewRound.objects.get()
    assert AxisResult.objects.get(round=review_round, axis="security").result == "fail"
    person = user_factory()
    for node in ReviewNode.objects.filter(
        round=review_round, status__in=("open", "consensus_ready"), duplicate_of__isnull=True
    ):
        node_dismiss(node=node, user=person, reason="accepted risk in this sample")
    security = AxisResult.objects.get(round=review_round, axis="security")
    assert security.result == "pass" and security.source == "tokens"
    assert review_round.verdict.level in ("ship", "hold")
    assert review_round.verdict.level != "block"


def test_a_round_waiting_on_its_reviewers_times_out(no_model, sample, workspace, alice, settings):
    """A round whose steps never ran (their worker is gone) fails once it is too old, even
    though its stage still has open steps."""
    from datetime import timedelta

    from reviews.models import PipelineStep
    from reviews.pipeline.runner import advance
    from reviews.services.requests import review_request
    from workspaces.models import Repository

    path, base, head = sample
    settings.QUORUM_LOCAL_REPO_ROOTS = [path.parent]
    settings.QUORUM_WORKTREE_ROOT = path.parent / "worktrees"
    repo = Repository.objects.create(workspace=workspace, kind="local", local_path=str(path))
    waiting = review_request(repository=repo, actor=alice, base=base, head=head, queue=False)
    advance(waiting.pk, dispatch=lambda kind, object_id: None)  # its steps are never run
    waiting.refresh_from_db()
    assert waiting.stage == "reviewers" and waiting.state == "running"
    assert PipelineStep.objects.filter(round=waiting, state="pending").exists()
    ReviewRound.objects.filter(pk=waiting.pk).update(
        created_at=waiting.created_at - timedelta(hours=4)
    )
    advance(waiting.pk, dispatch=lambda kind, object_id: None)
    waiting.refresh_from_db()
    assert waiting.state == "failed" and "timed out" in waiting.error
