"""Reviewer settings take effect in a real round against the fake model server: a disabled
reviewer is never asked, a custom reviewer runs with its own few-shots and criteria in the tiers
it is enabled for, a per-reviewer endpoint is the one called with the key its variable names,
and the combined trivial-change reviewer is told to check the original request."""

from __future__ import annotations

import json
import subprocess

import pytest

from reviews.agents.prompts import DIMENSION_FOCUS, REVIEWER_SYSTEM_PROMPT
from reviews.models import ReviewerStream
from reviews.pipeline.runner import run_inline
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from reviews.services.requests import review_request
from reviews.sources.sample_repo import create_sample_repository
from tests.fakes.model_server import FakeModelServer, good_findings
from tests.reviews import pipeline_scenarios as scenario
from workspaces import services
from workspaces.models import Repository, ReviewerConfig

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "Add product search and order deletion."


@pytest.fixture
def repo(settings, tmp_path, workspace, fake_model):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model)
    path = tmp_path / "shop"
    create_sample_repository(path)
    return Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(path.resolve())
    )


@pytest.fixture
def review(repo, alice):
    def run(tier="thorough", head="feature/search", original_request=REQUEST):
        review_round = review_request(
            repository=repo,
            actor=alice,
            base="main",
            head=head,
            tier=tier,
            original_request=original_request,
            queue=False,
        )
        done = run_inline(review_round.pk)
        assert done.state == "finished", done.error
        return done

    return run


def _messages(fake: FakeModelServer, opening: str) -> list[tuple[str, str]]:
    """(system prompt, user message) of every first request whose role opens so: the role is
    the last part of the user message, after the brief every reviewer of the round shares."""
    found = []
    for request in fake.recorded("openai"):
        messages = request.json.get("messages", []) if isinstance(request.json, dict) else []
        if any(m.get("role") != "system" and m.get("role") != "user" for m in messages):
            continue  # a later turn of the same conversation
        texts = {m["role"]: _text(m["content"]) for m in messages}
        role = texts.get("user", "").rpartition("## Your role\n\n")[2]
        if role.startswith(opening):
            found.append((texts["system"], texts["user"]))
    return found


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


def _model_streams(review_round) -> list[str]:
    streams = review_round.streams.filter(kind=ReviewerStream.Kind.MODEL)
    return sorted(streams.values_list("name", flat=True))


def _set(workspace, alice, key, **data):
    config = ReviewerConfig.objects.get(workspace=workspace, key=key)
    services.reviewer_config_update(config=config, actor=alice, data=data)


@pytest.mark.parametrize(
    ("tier", "key"),
    [("thorough", "security"), ("balanced", "quality"), ("adaptive", "requirements")],
)
def test_a_disabled_reviewer_never_receives_a_request_and_the_round_says_so(
    review, fake_model, workspace, alice, tier, key
):
    _set(workspace, alice, key, enabled=False)
    review_round = review(tier=tier)
    assert not _messages(fake_model, f"You are the {key} reviewer.")
    assert key not in _model_streams(review_round)
    assert review_round.stats.reviewers_disabled == [key]
    assert key not in (review_round.stats.reviewers or [])
    report = report_markdown(review_page(space=review_round.space))
    assert f"Not run: the {key} reviewer (disabled by the workspace's settings)." in report
    assert "FAILED" not in report
    # The others still ran: switching one reviewer off is not switching the round off.
    assert _messages(fake_model, "You are the implementation reviewer.") or tier == "adaptive"


def test_switched_back_on_it_runs_again(review, fake_model, workspace, alice):
    _set(workspace, alice, "implementation", enabled=False)
    review(tier="light")
    assert not _messages(fake_model, "You are the implementation reviewer.")
    _set(workspace, alice, "implementation", enabled=True)
    again = review(tier="light")
    assert _messages(fake_model, "You are the implementation reviewer.")
    assert again.stats.reviewers_disabled == []


def _custom(workspace, alice, **overrides):
    data = {
        "name": "Payments desk",
        "base_agent": "implementation",
        "instructions": "Money is kept in cents.",
        "criteria": [{"name": "rounding safety", "weight": 4}],
        "few_shots": [
            {
                "excerpt": "total = price * 1.1",
                "good": "P1: float money; use Decimal",
                "bad": "looks fine",
            }
        ],
        "tiers": ["light"],
        **overrides,
    }
    return services.reviewer_config_create(
        workspace=workspace, actor=alice, key="payments", data=data
    )


def test_a_custom_reviewer_runs_with_its_few_shots_criteria_and_base_agent(
    review, fake_model, workspace, alice
):
    _custom(workspace, alice)
    fake_model.add_script(
        good_findings([], path="shop/orders.py", name="payments"),
        marker="You are the payments reviewer.",
    )
    review_round = review(tier="light")
    # The sample's risky patterns: the built-in implementation reviewer checks security too.
    assert _model_streams(review_round) == ["implementation", "payments"]
    assert review_round.facts.security_check == ["implementation"]
    stream = review_round.streams.get(name="payments")
    assert stream.dimension == "implementation" and stream.state == "done"
    [(system, user)] = _messages(fake_model, "You are the payments reviewer.")
    # Its settings are its own part of the request, after what every reviewer shares.
    assert system == REVIEWER_SYSTEM_PROMPT
    role = user.rpartition("## Your role")[2]
    assert "This workspace calls you Payments desk." in role
    assert "total = price * 1.1" in role and "P1: float money; use Decimal" in role
    assert "A verdict to avoid: looks fine" in role
    assert "rounding safety (weight 4)" in role
    assert "Money is kept in cents." in role
    assert DIMENSION_FOCUS["implementation"] in role  # its base agent's focus
    assert "Security check" not in role


def test_a_custom_reviewer_runs_only_in_the_tiers_it_is_enabled_for(
    review, fake_model, workspace, alice
):
    _custom(workspace, alice, tiers=["thorough"])
    assert "payments" not in _model_streams(review(tier="light"))
    assert not _messages(fake_model, "You are the payments reviewer.")
    assert "payments" in _model_streams(review(tier="thorough"))
    assert _messages(fake_model, "You are the payments reviewer.")


def test_a_custom_reviewer_joins_adaptive_rounds_beside_its_base_agents_dimension(
    review, fake_model, workspace, alice
):
    # Adaptive rounds always select quality on a change of this size, never "architecture"
    # unless the change calls for it; a quality-based reviewer joins, an adaptive-less one not.
    _custom(workspace, alice, base_agent="quality", tiers=["adaptive"])
    review_round = review(tier="adaptive")
    selected = {dimension for _, dimension in review_round.facts.selected}
    assert "quality" in selected
    assert "payments" in _model_streams(review_round)
    assert review_round.streams.get(name="payments").dimension == "quality"
    [(_, user)] = _messages(fake_model, "You are the payments reviewer.")
    assert DIMENSION_FOCUS["quality"] in user
    ReviewerConfig.objects.filter(key="payments").update(tiers=["light", "balanced"])
    assert "payments" not in _model_streams(review(tier="adaptive"))


def test_a_disabled_custom_reviewer_does_not_run(review, fake_model, workspace, alice):
    _custom(workspace, alice, enabled=False)
    review_round = review(tier="light")
    assert not _messages(fake_model, "You are the payments reviewer.")
    assert review_round.stats.reviewers_disabled == ["payments"]


def test_a_per_reviewer_base_url_is_the_one_called_with_the_key_its_variable_names(
    review, fake_model, workspace, alice, monkeypatch, settings
):
    settings.QUORUM_MODEL_KEY_VARIABLES = ["SECOND_API_KEY"]
    second = FakeModelServer(api_key="sk-second-server-key-0123").start()
    try:
        scenario.install(second)
        monkeypatch.setenv("SECOND_API_KEY", second.api_key)
        _set(
            workspace,
            alice,
            "implementation",
            base_url=second.openai_base_url,
            api_key_env="SECOND_API_KEY",
        )
        review_round = review(tier="balanced")
        assert review_round.streams.get(name="implementation").state == "done"
        assert _messages(second, "You are the implementation reviewer.")
        assert not _messages(fake_model, "You are the implementation reviewer.")
        assert _messages(fake_model, "You are the quality reviewer.")  # the others: the default
        reviewer_calls = [r for r in second.recorded() if r.path.endswith("/chat/completions")]
        assert reviewer_calls
        assert {r.headers["authorization"] for r in reviewer_calls} == {f"Bearer {second.api_key}"}
    finally:
        second.stop()


def test_the_servers_key_never_goes_to_an_endpoint_a_reviewer_chose(
    review, fake_model, workspace, alice
):
    second = FakeModelServer(api_key="sk-second-server-key-0123").start()
    try:
        scenario.install(second)
        _set(workspace, alice, "implementation", base_url=second.openai_base_url)
        review_round = review(tier="light")
        assert not any(fake_model.api_key in r.body + str(r.headers) for r in second.recorded())
        stream = review_round.streams.get(name="implementation")
        assert stream.state == "failed" and "no key of its own" in stream.error
        assert not _messages(fake_model, "You are the implementation reviewer.")
    finally:
        second.stop()


def test_a_key_variable_that_is_not_set_fails_the_reviewer_without_a_request(
    review, fake_model, workspace, alice, monkeypatch, settings
):
    settings.QUORUM_MODEL_KEY_VARIABLES = ["MISSING_API_KEY"]
    monkeypatch.delenv("MISSING_API_KEY", raising=False)
    _set(workspace, alice, "implementation", api_key_env="MISSING_API_KEY")
    review_round = review(tier="light")
    stream = review_round.streams.get(name="implementation")
    assert stream.state == "failed" and "MISSING_API_KEY" in stream.error
    assert not _messages(fake_model, "You are the implementation reviewer.")


def _trivial_branch(repo) -> str:
    """A one-line fix on top of main: a trivial change, not high-risk."""
    path = repo.local_path

    def git(*args):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)

    git("checkout", "-q", "-b", "fix/empty-total", "main")
    orders = f"{path}/shop/orders.py"
    with open(orders) as f:
        text = f.read()
    with open(orders, "w") as f:
        f.write(text.replace("return row[0] if row else 0", "return row[0] if row else 0.0"))
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "Empty total")
    git("checkout", "-q", "main")
    return "fix/empty-total"


def test_the_combined_trivial_change_reviewer_checks_the_original_request(review, repo, fake_model):
    request = "Return 0.0, not 0, for an order with no total; keep the rest unchanged."
    review_round = review(tier="adaptive", head=_trivial_branch(repo), original_request=request)
    assert review_round.stats.classification.size == "trivial"
    assert _model_streams(review_round) == ["quality"]
    assert review_round.facts.requirements_check == ["quality"]
    [(system, user)] = _messages(fake_model, "You are the quality reviewer.")
    assert request in user  # the request text itself, verbatim
    role = user.rpartition("## Your role")[2]
    assert "Also check the change against the original request in the brief (requirements)" in role
    assert "Also check" not in system


def test_a_reviewer_without_the_check_is_not_told_to_make_it(review, fake_model):
    review(tier="light")
    [(system, user)] = _messages(fake_model, "You are the implementation reviewer.")
    assert REQUEST in user  # every brief quotes the request
    assert "Also check the change against the original request" not in user + system


def test_a_custom_reviewer_on_the_combined_base_agent_checks_the_request(
    review, fake_model, workspace, alice
):
    _custom(workspace, alice, base_agent="combined", few_shots=[], criteria=[])
    review_round = review(tier="light")
    assert review_round.streams.get(name="payments").dimension == "quality"
    [(system, user)] = _messages(fake_model, "You are the payments reviewer.")
    assert DIMENSION_FOCUS["quality"] in user
    assert REQUEST in user and "(requirements)" in user
    assert json.dumps(REQUEST)[1:-1] in json.dumps(user)
