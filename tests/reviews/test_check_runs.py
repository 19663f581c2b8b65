"""The round's `Quorum` check run on GitHub (issue 17, item 1): one per round, in progress while
the round runs, completed with the verdict's conclusion, updated when triage changes the
verdict, never duplicated by a retry; a commit status for token-only setups; nothing for local
repositories or a workspace that denies it. Against the fake GitHub, which validates check runs
and statuses like GitHub; the sync task runs eagerly here (the Celery and embedded runs are in
test_check_run_runtimes.py)."""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import transaction

from guardrails.models import ActionPolicy, AuditEvent
from guardrails.services.policies import policy_update
from reviews.domain.round_states import RoundState
from reviews.models import ReviewRound
from reviews.services.check_runs import check_run_enqueue
from reviews.services.node_recording import node_record
from reviews.services.nodes import node_dismiss
from reviews.services.rounds import round_cancel, round_start, round_transition
from reviews.services.spaces import pull_request_upsert, space_get_or_create
from reviews.services.verdicts import round_finalise
from reviews.tasks import check_run_sync_task
from tests.fakes.github_server import FakeGitHub
from tests.fixtures import node_payload, use_fake_github
from workspaces.models import Repository
from workspaces.rules import RuleError

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

BASE = "".join(f"v{i} = {i}\n" for i in range(1, 31))
PUBLIC = "https://quorum.example.com"


@pytest.fixture
def fake_github():
    """The fake GitHub on the wall clock: app JWTs are signed with the real time."""
    fake = FakeGitHub(clock=time.time).start()
    yield fake
    fake.stop()


def app_identity(settings, fake, tmp_path) -> None:
    """Quorum authenticates as the GitHub App 77 installed on the fake's repositories."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    fake.configure_app(77, public, slug="quorum")
    (tmp_path / "app.pem").write_bytes(pem)
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = fake.base_url, ""
    settings.GITHUB_APP_ID, settings.GITHUB_APP_PRIVATE_KEY_PATH = "77", str(tmp_path / "app.pem")


@pytest.fixture
def pull(fake_github, git_repo_factory, workspace, settings):
    """acme/app#5 on the fake GitHub and connected; returns (repository, head sha, git repo)."""
    repo = git_repo_factory()
    repo.commit("base", {"calc.py": BASE}, branch="main")
    repo.commit("change", {"calc.py": BASE.replace("v3 = 3\n", "v3 = 3 / 0\n")}, branch="feature")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 5, base="main", head="feature", author="dev")
    settings.QUORUM_PUBLIC_URL = PUBLIC
    # No gated axis: the verdict follows the findings alone.
    workspace.gated_axes = []
    workspace.save(update_fields=["gated_axes"])
    repository = Repository.objects.create(workspace=workspace, kind="github", full_name="acme/app")
    return repository, repo.sha("feature"), repo


def _round(repository, head) -> ReviewRound:
    pr = pull_request_upsert(
        repository=repository, number=5, base_ref="main", head_ref="feature", head_sha=head
    )
    return round_start(space=space_get_or_create(pull_request=pr), head_sha=head, tier="light")


def _sync(review_round: ReviewRound) -> str:
    return check_run_sync_task.apply(args=[review_round.pk]).get()


def _finish(review_round: ReviewRound, priority: str):
    """The round's reviewer found one issue of `priority`; the pipeline's last stage decided."""
    stream = review_round.streams.create(name="implementation", agent="implementation")
    node = node_record(
        stream=stream,
        payload=node_payload(
            priority=priority,
            confidence=0.9,
            title="Division by zero",
            anchor={"path": "calc.py", "start_line": 3, "end_line": 3},
        ),
        file_lines={"calc.py": 30},
    ).node
    assert round_transition(review_round, RoundState.FINISHED)
    round_finalise(review_round=review_round)
    return node


def test_a_round_has_one_check_run_in_progress_then_the_verdict_and_triage_updates_it(
    pull, fake_github, settings, tmp_path, alice
):
    app_identity(settings, fake_github, tmp_path)
    repository, head, _ = pull
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    assert _sync(review_round) == "created"
    [run] = fake_github.check_runs("acme", "app")
    assert (run["name"], run["head_sha"], run["status"]) == ("Quorum", head, "in_progress")
    assert run["conclusion"] is None
    assert "Quorum is reviewing this commit (round 1, light tier" in run["output"]["summary"]
    space = review_round.space
    page = f"{PUBLIC}/w/{space.workspace.slug}/reviews/{space.pk}/?round=1"
    assert run["details_url"] == page
    # Posted as the app's installation, never with a person's token.
    [post] = fake_github.requests_to("POST", r"/repos/acme/app/check-runs")
    assert post.headers["authorization"].startswith("Bearer ghs_")

    blocking = _finish(review_round, "P0")
    assert review_round.verdict.level == "block"
    assert _sync(review_round) == "updated"
    [run] = fake_github.check_runs("acme", "app")
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    summary = run["output"]["summary"]
    assert summary.startswith("# Review: BLOCKED\n\n**Verdict:** BLOCKED — P0 at 0.90")
    assert "Division by zero" in summary
    assert run["output"]["title"] == "Block (round 1)"

    # Triage: dismissing the blocking finding makes it Ship, and the same check says success.
    node_dismiss(node=blocking, user=alice, reason="guarded by the caller")
    review_round.refresh_from_db()
    assert review_round.verdict.level == "ship"
    assert _sync(review_round) == "updated"
    [run] = fake_github.check_runs("acme", "app")
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    assert run["output"]["summary"].startswith("# Review: APPROVED")
    assert len(fake_github.requests_to("POST", r"/repos/acme/app/check-runs")) == 1
    review_round.refresh_from_db()
    assert review_round.check_run_id == run["id"]
    # Each post is audited as the app, naming the round.
    posted = AuditEvent.objects.filter(action="checkRun.executed").order_by("seq")
    assert [(e.actor_kind, e.payload["round"], e.payload["conclusion"]) for e in posted] == [
        ("app", 1, None),
        ("app", 1, "failure"),
        ("app", 1, "success"),
    ]


@pytest.mark.parametrize(("hold_fails", "conclusion"), [(False, "neutral"), (True, "failure")])
def test_hold_concludes_neutral_or_failure_as_the_repository_says(
    pull, fake_github, settings, tmp_path, hold_fails, conclusion
):
    app_identity(settings, fake_github, tmp_path)
    repository, head, _ = pull
    Repository.objects.filter(pk=repository.pk).update(hold_fails_check=hold_fails)
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    _finish(review_round, "P1")
    assert review_round.verdict.level == "hold"
    _sync(review_round)
    [run] = fake_github.check_runs("acme", "app")
    assert (run["status"], run["conclusion"]) == ("completed", conclusion)


@pytest.mark.parametrize("fault", ["lost answer", "refused"])
def test_a_5xx_on_the_first_post_then_success_leaves_exactly_one_check_run(
    pull, fake_github, settings, tmp_path, fault
):
    """A 502 whose request GitHub applied (the answer was lost) is found by name and external
    id and updated; a 500 that applied nothing is created again. One run either way."""
    app_identity(settings, fake_github, tmp_path)
    repository, head, _ = pull
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    fake_github.inject(
        "502" if fault == "lost answer" else "500",
        method="POST",
        path=r"/repos/acme/app/check-runs",
        after_apply=fault == "lost answer",
    )
    _sync(review_round)  # the first try fails; the task retries it
    [run] = fake_github.check_runs("acme", "app")
    review_round.refresh_from_db()
    assert review_round.check_run_id == run["id"]
    assert run["status"] == "in_progress"
    looked = fake_github.requests_to("GET", rf"/repos/acme/app/commits/{head}/check-runs")
    assert [r.query["check_name"] for r in looked] == [["Quorum"]]
    posts = fake_github.requests_to("POST", r"/repos/acme/app/check-runs")
    assert [p.status for p in posts] == ([502] if fault == "lost answer" else [500, 201])

    # The rest of the round updates that run, and never creates another.
    _finish(review_round, "P3")
    _sync(review_round)
    [run] = fake_github.check_runs("acme", "app")
    assert (run["status"], run["conclusion"]) == ("completed", "success")


def test_a_run_gone_on_github_is_created_again_for_the_round(pull, fake_github, settings, tmp_path):
    app_identity(settings, fake_github, tmp_path)
    repository, head, _ = pull
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    _sync(review_round)
    fake_github.repos[("acme", "app")].check_runs.clear()  # deleted with a reinstalled app
    _finish(review_round, "P0")
    assert _sync(review_round) == "created"
    [run] = fake_github.check_runs("acme", "app")
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    review_round.refresh_from_db()
    assert review_round.check_run_id == run["id"]


def test_superseded_and_cancelled_rounds_complete_their_check(
    pull, fake_github, settings, tmp_path, alice
):
    app_identity(settings, fake_github, tmp_path)
    repository, head, repo = pull
    first = _round(repository, head)
    assert round_transition(first, RoundState.RUNNING)
    _sync(first)
    repo.commit("more", {"more.py": "x = 1\n"}, branch="feature")
    second = _round(repository, repo.sha("feature"))  # a push: the new head replaces it
    first.refresh_from_db()
    assert first.state == "superseded"
    _sync(first)
    assert round_transition(second, RoundState.RUNNING)
    _sync(second)
    round_cancel(review_round=second, actor=alice)
    _sync(second)
    runs = {r["external_id"]: r for r in fake_github.check_runs("acme", "app")}
    assert len(runs) == 2
    old, new = runs[f"quorum-round-{first.pk}"], runs[f"quorum-round-{second.pk}"]
    assert (old["status"], old["conclusion"]) == ("completed", "neutral")
    assert old["output"]["summary"] == (
        "A newer push is reviewed by round 2; this round gives no verdict."
    )
    assert (new["status"], new["conclusion"]) == ("completed", "cancelled")
    assert new["output"]["summary"] == f"Cancelled by {alice.email}."


def test_a_token_only_setup_posts_the_quorum_commit_status(pull, fake_github, settings):
    use_fake_github(settings, fake_github)  # a token, no app: check runs are not allowed
    repository, head, _ = pull
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    assert _sync(review_round) == "status"
    _finish(review_round, "P0")
    _sync(review_round)
    statuses = fake_github.statuses("acme", "app")
    assert [(s["context"], s["state"], s["sha"]) for s in statuses] == [
        ("quorum", "pending", head),
        ("quorum", "failure", head),
    ]
    assert statuses[1]["description"] == "Block (round 1)"
    assert statuses[1]["target_url"].startswith(f"{PUBLIC}/w/")
    assert not fake_github.requests_to("POST", r"/repos/acme/app/check-runs")


def test_a_verdict_re_decided_to_the_same_result_writes_its_status_once(
    pull, fake_github, settings
):
    """Four triage decisions that leave the verdict Block: GitHub is told Block once, and
    the audit trail has one execution per write."""
    from guardrails.models import AuditEvent

    use_fake_github(settings, fake_github)
    repository, head, _ = pull
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    _sync(review_round)
    _finish(review_round, "P0")
    assert _sync(review_round) == "status"
    for _ in range(4):
        round_finalise(review_round=review_round)
        assert _sync(review_round) == "unchanged"
    statuses = fake_github.statuses("acme", "app")
    assert [s["state"] for s in statuses] == ["pending", "failure"]
    assert AuditEvent.objects.filter(action="checkRun.executed").count() == 2


def _syncs_of(review_round: ReviewRound, callbacks) -> int:
    """The check syncs among the callbacks a transaction queued for after its commit."""
    return sum(
        getattr(c, "round_id", review_round.pk) == review_round.pk
        and "check_run" in f"{getattr(c, '__qualname__', '')} {type(c).__module__}"
        for c in callbacks
    )


@pytest.mark.django_db(transaction=True)  # each transaction commits, as in production
def test_a_round_that_finishes_queues_one_sync_of_its_status(
    pull, fake_github, settings, django_capture_on_commit_callbacks
):
    """The round's move to finished and its first verdict, in the finaliser's one transaction,
    each ask for a sync: one is queued (the burst ran a second one per round that found
    GitHub already told), and it posts the verdict once."""
    use_fake_github(settings, fake_github)
    repository, head, _ = pull
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    _sync(review_round)
    with transaction.atomic():
        with django_capture_on_commit_callbacks() as callbacks:
            _finish(review_round, "P0")
        assert _syncs_of(review_round, callbacks) == 1
    _sync(review_round)  # what the one queued task does (no worker runs here)
    assert [s["state"] for s in fake_github.statuses("acme", "app")] == ["pending", "failure"]
    assert AuditEvent.objects.filter(action="checkRun.executed").count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_sync_queued_in_a_rolled_back_savepoint_is_queued_again(
    pull, fake_github, settings, django_capture_on_commit_callbacks
):
    use_fake_github(settings, fake_github)
    repository, head, _ = pull
    review_round = _round(repository, head)
    with transaction.atomic(), django_capture_on_commit_callbacks() as callbacks:
        try:
            with transaction.atomic():
                check_run_enqueue(review_round)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        check_run_enqueue(review_round)
        check_run_enqueue(review_round)
    assert _syncs_of(review_round, callbacks) == 1


def test_a_workspace_that_denies_check_runs_posts_nothing(
    pull, fake_github, settings, tmp_path, workspace, alice
):
    app_identity(settings, fake_github, tmp_path)
    repository, head, _ = pull
    # Tightening applies at once; approval is no option for a check run.
    policy_update(
        workspace=workspace,
        action="checkRun",
        policy="deny",
        approvals_required=1,
        expires_after_minutes=60,
        actor=alice,
    )
    assert ActionPolicy.objects.get(action_class="checkRun").policy == "deny"
    with pytest.raises(RuleError, match="allow, deny"):
        policy_update(
            workspace=workspace,
            action="checkRun",
            policy="require_approval",
            approvals_required=1,
            expires_after_minutes=60,
            actor=alice,
        )
    review_round = _round(repository, head)
    assert round_transition(review_round, RoundState.RUNNING)
    assert _sync(review_round) == "denied"
    _finish(review_round, "P0")
    assert _sync(review_round) == "denied"
    assert fake_github.check_runs("acme", "app") == []
    assert AuditEvent.objects.filter(action="checkpoint.refused").count() == 1


def test_a_local_repository_posts_nothing(workspace, fake_github, settings, tmp_path):
    app_identity(settings, fake_github, tmp_path)
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(tmp_path)
    )
    pr = pull_request_upsert(
        repository=repository, number=None, base_ref="main", head_ref="feature", head_sha="a" * 40
    )
    review_round = round_start(
        space=space_get_or_create(pull_request=pr), head_sha="a" * 40, tier="light"
    )
    assert round_transition(review_round, RoundState.RUNNING)
    assert _sync(review_round) == "local"
    assert not [r for r in fake_github.requests if "check-runs" in r.path]


def test_the_fake_refuses_check_runs_as_github_does(pull, fake_github, settings, tmp_path):
    """What GitHub refuses, the fake refuses: so a wrong payload of ours fails a test."""
    from reviews.services.github import github_client
    from reviews.sources.github_client import GitHubForbidden, GitHubValidationError

    app_identity(settings, fake_github, tmp_path)
    _, head, _ = pull
    output = {"title": "t", "summary": "s"}
    with github_client() as client:
        refused = [
            {"head_sha": head},  # no name
            {"name": "Quorum"},  # no head_sha
            {"name": "Quorum", "head_sha": head, "status": "in_progress", "conclusion": "success"},
            {"name": "Quorum", "head_sha": head, "status": "completed"},  # no conclusion
            {"name": "Quorum", "head_sha": head, "conclusion": "passed"},
            {"name": "Quorum", "head_sha": head, "output": {"title": "t", "summary": "x" * 65_536}},
            {"name": "Quorum", "head_sha": "0" * 40, "output": output},  # no such commit
        ]
        for fields in refused:
            with pytest.raises(GitHubValidationError):
                client.create_check_run("acme", "app", **fields)
        run = client.create_check_run("acme", "app", name="Quorum", head_sha=head, output=output)
        with pytest.raises(GitHubValidationError):
            client.update_check_run("acme", "app", run["id"], conclusion="maybe")
        done = client.update_check_run("acme", "app", run["id"], conclusion="success")
        assert (done["status"], done["conclusion"]) == ("completed", "success")
    assert len(fake_github.check_runs("acme", "app")) == 1
    # A token that is not an app's installation may not create check runs at all.
    use_fake_github(settings, fake_github)
    with github_client() as client, pytest.raises(GitHubForbidden):
        client.create_check_run("acme", "app", name="Quorum", head_sha=head)
