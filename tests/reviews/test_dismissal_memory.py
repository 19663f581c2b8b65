"""Dismissals that stick: whole rounds of two pull requests reviewed offline (ruff, bandit),
with people's decisions in between (docs/domain-rules.md#dismissal-memory).

- a finding dismissed with a reason, its code unchanged on the next round (lines shifted), is
  recorded dismissed again, crediting the person, and does not count in the verdict;
- a finding whose line changed comes back, a true one included;
- a rule dismissed twice in a file as not a defect is folded on a new pull request, and the
  same rule in another file is not;
- a person reopening a folded finding brings it back for good.
"""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.models import MemoryFact, ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from reviews.services.consolidation import round_consolidate
from reviews.services.nodes import node_dismiss, node_reopen
from reviews.services.requests import review_request
from tests.fakes.gitrepo import GitRepo
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

JITTER = """import random


def backoff(attempt):
    return attempt * 2 + random.random()
"""

CLEANUP = """import os


def remove_quietly(path):
    try:
        os.remove(path)
    except Exception:
        pass
"""

LEGACY = """def plugin_total(items):
    return sum(items) + PLUGIN_OFFSET
"""

HANDLERS = """def total(items):
    return sum(items) + totl
"""


@pytest.fixture
def repo(settings, tmp_path):
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    git = GitRepo.init(tmp_path / "app")
    git.commit("base", {"app/__init__.py": "", "README.md": "app\n"}, branch="main")
    return git


def _review(repository, alice, head: str):
    started = review_request(
        repository=repository, actor=alice, base="main", head=head, queue=False
    )
    done = run_inline(started.pk)
    assert done.state == "finished", done.error
    return done


def _finding(review_round, rule: str, path: str) -> ReviewNode:
    return ReviewNode.objects.select_related("decided_by").get(
        round=review_round, title__startswith=f"{rule}:", path=path, duplicate_of__isnull=True
    )


def test_dismissals_stick_across_rounds_and_pull_requests(repo, workspace, alice, client_for):
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo.path.resolve())
    )
    repo.commit(
        "feature one",
        {
            "app/jitter.py": JITTER,
            "app/cleanup.py": CLEANUP,
            "app/legacy.py": LEGACY,
            "app/handlers.py": HANDLERS,
        },
        branch="feat-1",
    )
    first = _review(repository, alice, "feat-1")
    random_1 = _finding(first, "B311", "app/jitter.py")
    swallow = _finding(first, "B110", "app/cleanup.py")
    legacy = _finding(first, "F821", "app/legacy.py")
    typo = _finding(first, "F821", "app/handlers.py")
    assert first.verdict.level == "hold"  # two undefined names (P1)
    node_dismiss(node=random_1, user=alice, reason="False positive: jitter, not a secret")
    node_dismiss(node=swallow, user=alice, reason="Intended: cleanup is best effort")
    node_dismiss(node=legacy, user=alice, reason="The plugin loader injects PLUGIN_OFFSET")
    node_dismiss(node=typo, user=alice, reason="Will fix in the next commit")

    # Round 2: lines shift in cleanup and legacy (their code unchanged); the random call and
    # the typo's line change, and both findings are still there.
    repo.commit(
        "feature one, again",
        {
            "app/jitter.py": JITTER.replace("random.random()", "random.uniform(0, 1)"),
            "app/cleanup.py": "# Helpers that never raise.\n\n" + CLEANUP,
            "app/legacy.py": "# Kept for the plugins.\n" + LEGACY,
            "app/handlers.py": HANDLERS.replace("+ totl", "+ 2 * totl"),
        },
        branch="feat-1",
    )
    second = _review(repository, alice, "feat-1")
    assert second.space_id == first.space_id and second.number == 2

    carried = _finding(second, "B110", "app/cleanup.py")
    assert carried.start_line == swallow.start_line + 2  # it moved, its code did not
    assert carried.status == "dismissed"
    assert (carried.decided_by, carried.decision_reason, carried.decided_at) == (
        alice,
        "Intended: cleanup is best effort",
        ReviewNode.objects.get(pk=swallow.pk).decided_at,
    )
    assert carried.tags.memory.kind == "carried" and carried.tags.memory.round == 1
    carried_p1 = _finding(second, "F821", "app/legacy.py")
    assert carried_p1.status == "dismissed" and carried_p1.tags.memory.nodes == [legacy.pk]

    # Changed lines bring their findings back: the true one, and the random call (dismissed
    # once as a false positive: one dismissal of another finding is no pattern yet).
    typo_again = _finding(second, "F821", "app/handlers.py")
    random_2 = _finding(second, "B311", "app/jitter.py")
    assert typo_again.status == "open" and typo_again.tags.memory is None
    assert random_2.status == "open" and random_2.tags.memory is None

    # The carried P1 never counts: the verdict holds for the typo alone.
    second.verdict.refresh_from_db()
    assert second.verdict.level == "hold"
    assert second.verdict.contributing == [str(typo_again.pk)]
    assert "app/legacy.py" not in second.verdict.rule

    # Each fold is in the audit trail, crediting the person's decision.
    folded = AuditEvent.objects.filter(action="node.dismissal_carried").order_by("seq")
    assert {e.target_id for e in folded} == {str(carried.pk), str(carried_p1.pk)}
    assert folded.first().payload["credited"] == alice.pk

    # The page shows both with the dismissed ones, saying whose decision and why.
    page = client_for(alice).get(f"/w/{workspace.slug}/reviews/{second.space_id}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert (
        f"Previously dismissed by {alice.email} because “Intended: cleanup is best effort” "
        "(carried from round 1: the code at its lines has not changed)" in html
    )
    assert f'id="index-node-{carried.pk}" class="finding-line node-dismissed"' in html

    # The report's decisions say where the decision comes from.
    report = report_markdown(review_page(space=second.space))
    assert f"- Dismissed: P3 {carried.title}" in report
    assert (
        f"by {alice.email}: “Intended: cleanup is best effort” (carried from round 1: the code "
        "at its lines has not changed)" in report
    )

    node_dismiss(node=random_2, user=alice, reason="Not a bug: jitter for retries")
    assert MemoryFact.objects.filter(source_node__title__startswith="B311").count() == 2

    # A new pull request: the random call in jitter.py again (a third shape of it) is folded
    # by the pattern; the same rule in the token module is not (another file).
    repo.checkout("main")
    repo.commit(
        "feature two",
        {
            "app/jitter.py": JITTER.replace("random.random()", "random.random() / 2"),
            "app/tokens.py": (
                "import random\nimport string\n\n\ndef reset_token():\n"
                "    return ''.join(random.choice(string.ascii_letters) for _ in range(20))\n"
            ),
        },
        branch="feat-2",
    )
    third = _review(repository, alice, "feat-2")
    assert third.space_id != first.space_id
    pattern = _finding(third, "B311", "app/jitter.py")
    assert pattern.status == "dismissed"
    assert pattern.tags.memory.kind == "pattern"
    assert sorted(pattern.tags.memory.nodes) == sorted([random_1.pk, random_2.pk])
    assert pattern.decision_reason == "Not a bug: jitter for retries"
    token = _finding(third, "B311", "app/tokens.py")
    assert token.status == "open" and token.tags.memory is None
    assert AuditEvent.objects.filter(
        action="node.dismissal_pattern", target_id=str(pattern.pk)
    ).exists()

    page = client_for(alice).get(f"/w/{workspace.slug}/reviews/{third.space_id}/")
    assert (
        f"Previously dismissed by {alice.email} because “Not a bug: jitter for retries” "
        "(2 findings like it were dismissed in this file)" in page.content.decode()
    )

    # A person reopens it: it counts again, and a later lead pass leaves it open.
    node_reopen(node=pattern, user=alice, reason="This one is used for a token after all")
    round_consolidate(review_round=third)
    pattern.refresh_from_db()
    assert pattern.status == "open" and pattern.decided_by is None
    assert pattern.tags.memory is not None  # kept: it is not folded a second time
    page = client_for(alice).get(f"/w/{workspace.slug}/reviews/{third.space_id}/")
    assert "Previously dismissed by" not in page.content.decode()
