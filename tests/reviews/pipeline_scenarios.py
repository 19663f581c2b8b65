"""Scripted reviewers for the sample repository (reviews/sources/sample_repo.py), played by the fake
model server. Shared by the in-process and the Celery pipeline tests."""

from __future__ import annotations

from tests.fakes.model_server import (
    FakeModelServer,
    Script,
    answer,
    good_findings,
    panel_answer,
    requirements_check,
    sample_finding,
    working_reviewer,
)
from workspaces.management.commands.demo_setup import SAMPLE_REQUEST

# The sample repository's original request asks for three features: product search, an export
# of the product list, and order deletion (the demo seeds the same text).
ORIGINAL_REQUEST = SAMPLE_REQUEST

CRITIC = "You are the completeness critic"
FOLLOW_UP = "You are the followup-"
SQL = {"path": "shop/search.py", "line": 12}
SHELL = {"path": "shop/search.py", "line": 18}
PERMISSION = {"path": "shop/views.py", "line": 13}


def sql_finding(**overrides):
    return sample_finding(
        SQL["path"],
        SQL["line"],
        title="SQL query built from the search term",
        body="The search term is formatted into the SQL string: use a query parameter.",
        priority="P0",
        confidence=0.9,
        triage={"category": "security", "severity": "critical", "effort": "small"},
        **overrides,
    )


def permission_finding():
    return sample_finding(
        PERMISSION["path"],
        PERMISSION["line"],
        title="Order deletion has no permission check",
        body="Any caller can delete any order; check request.user like total_view does.",
        priority="P1",
        confidence=0.85,
        triage={"category": "security", "severity": "high", "effort": "small"},
    )


def naming_finding():
    return sample_finding(
        "shop/search.py",
        16,
        type="suggestion",
        title="Name the export target explicitly",
        body="`filename` could say what it names.",
        priority="P3",
        confidence=0.6,
        triage={"category": "maintainability", "severity": "low", "effort": "small"},
    )


def export_gap_finding():
    return sample_finding(
        "shop/search.py",
        16,
        type="recommendation",
        title="The product export has no way in",
        body="export_products exists but no handler calls it: nobody can export the list.",
        priority="P2",
        confidence=0.7,
        triage={"category": "other", "severity": "medium", "effort": "small"},
        requirement_gap="partial_implementation",
    )


# The requirements reviewer's table for ORIGINAL_REQUEST, one row per requested feature.
REQUIREMENT_ROWS = [
    {
        "requirement": "Product search",
        "covered": "yes",
        "evidence": "shop/search.py:10 search_products, served by shop/views.py:21",
    },
    {
        "requirement": "An export of the product list",
        "covered": "partial",
        "evidence": "shop/search.py:16 export_products; no handler exposes it",
    },
    {
        "requirement": "A way to delete orders",
        "covered": "yes",
        "evidence": "shop/views.py:13 delete_order_view",
    },
]


def requirements_reviewer(**kw):
    return requirements_check(
        REQUIREMENT_ROWS,
        [export_gap_finding()],
        paths=("shop/search.py", "shop/views.py"),
        name="req",
        **{"one_turn": True, **kw},
    )


def reviewer(findings, *, path: str, name: str):
    """A reviewer as the rules ask: it works from the diff in its prompt and records its
    findings and its closing in one reply."""
    return good_findings(findings, path=path, name=name, one_turn=True)


REVIEWER_SCRIPTS = {
    # Two reviewers report the same defect: the lead pass must merge them, crediting both.
    "implementation": lambda: reviewer([sql_finding()], path="shop/search.py", name="impl"),
    "security": lambda: reviewer(
        [sql_finding(), permission_finding()], path="shop/search.py", name="sec"
    ),
    "quality": lambda: reviewer([naming_finding()], path="shop/search.py", name="quality"),
    "architecture": lambda: reviewer([], path="shop/views.py", name="arch"),
    "performance": lambda: reviewer([], path="shop/search.py", name="perf"),
    "requirements": requirements_reviewer,
}

# The same reviewers as models work on a real change (tests/bench/bench_cost.py): each reads
# one or two files first and records over two turns; some make parallel tool calls, some one
# call per reply. They record the same findings, so the round ends the same.
MULTI_TURN_SCRIPTS = {
    "implementation": lambda: working_reviewer(
        [sql_finding()], reads=("shop/search.py", "shop/db.py"), name="impl"
    ),
    "security": lambda: working_reviewer(
        [sql_finding(), permission_finding()],
        reads=("shop/search.py", "shop/views.py"),
        name="sec",
        parallel=False,
    ),
    "quality": lambda: working_reviewer(
        [naming_finding()], reads=("shop/search.py",), name="quality"
    ),
    "architecture": lambda: working_reviewer(
        [], reads=("shop/views.py", "shop/orders.py"), name="arch", parallel=False
    ),
    "performance": lambda: working_reviewer([], reads=("shop/search.py",), name="perf"),
    "requirements": lambda: working_reviewer(
        [export_gap_finding()],
        reads=("shop/search.py", "shop/views.py"),
        name="req",
        requirements=[dict(r) for r in REQUIREMENT_ROWS],
    ),
}

# What each lens says of every finding it is given (one entry per ref, read from the prompt).
LENS_ANSWERS = {
    "reachability": {
        "verdict": "real",
        "severity": "high",
        "reason": "the term reaches the query unchanged",
    },
    "false_positive": {"verdict": "real", "severity": "high", "reason": "no framework escapes it"},
    "severity": {"verdict": "real", "severity": "critical", "reason": "data exposure"},
}


def lens_script(lens: str, judge=None) -> Script:
    """A lens answering every finding of its group by ref: `judge(ref, text)` (default: its
    LENS_ANSWERS entry for each)."""
    fields = LENS_ANSWERS[lens]
    return Script(f"lens-{lens}", (panel_answer(judge or (lambda ref, text: fields)),))


# The lead's walkthrough of the sample change (one path it invents, which is dropped).
WALKTHROUGH_STEPS = [
    {
        "title": "Product search",
        "paths": ["shop/search.py"],
        "explanation": "Adds the search query and an export helper.",
    },
    {
        "title": "HTTP handlers",
        "paths": ["shop/views.py", "shop/routes.py"],
        "explanation": "Exposes search and order deletion as views.",
    },
]
LEAD_MARKER = "You are the lead reviewer."


def install(
    fake: FakeModelServer,
    *,
    latency: float = 0.0,
    overrides: dict[str, Script] | None = None,
    multi_turn: bool = False,
) -> None:
    """Route each reviewer, verifier lens and the lead's walkthrough to its script by the name
    in its prompts (a reviewer's is in its role, at the end of its user message).
    The critic judges nothing beyond the rules' warranted set, and a follow-up reviewer (when
    the rules ask for one) examines the search module and finds nothing; a test overrides
    either by adding its own script afterwards."""
    fake.add_script(Script("critic", (answer(warranted=[], gaps=[]),)), marker=CRITIC)
    fake.add_script(
        good_findings([], path="shop/search.py", name="followup", one_turn=True), marker=FOLLOW_UP
    )
    scripts = MULTI_TURN_SCRIPTS if multi_turn else REVIEWER_SCRIPTS
    for name, make in scripts.items():
        script = (overrides or {}).get(name) or make()
        if latency:
            from tests.fakes.model_server import slow

            script = slow(latency, then=script, name=script.name)
        fake.add_script(script, marker=f"You are the {name} reviewer.")
    for lens in LENS_ANSWERS:
        fake.add_script(lens_script(lens), marker=f"You are the {lens} verifier")
    fake.add_script(Script("lead", (answer(steps=WALKTHROUGH_STEPS),)), marker=LEAD_MARKER)


def critic_asks_for(fake: FakeModelServer, *dimensions: str) -> None:
    """The critic judges `dimensions` needed: the first that did not run gets a follow-up
    reviewer. (On the sample, a tier without a security reviewer has one of its reviewers
    check security, so the rules alone call for no follow-up.)"""
    fake.add_script(
        Script(f"critic-{'-'.join(dimensions)}", (answer(warranted=list(dimensions), gaps=[]),)),
        marker=CRITIC,
    )


def model_settings(settings, fake: FakeModelServer) -> None:
    settings.QUORUM_LLM_PROVIDER = "openai"
    settings.QUORUM_LLM_MODEL = "fake-reviewer"
    settings.QUORUM_LLM_BASE_URL = fake.openai_base_url
    settings.QUORUM_LLM_API_KEY = fake.api_key


def model_env(fake: FakeModelServer) -> dict[str, str]:
    return {
        "QUORUM_LLM_PROVIDER": "openai",
        "QUORUM_LLM_MODEL": "fake-reviewer",
        "QUORUM_LLM_BASE_URL": fake.openai_base_url,
        "QUORUM_LLM_API_KEY": fake.api_key,
    }


def sample_reviews(
    settings,
    tmp_path,
    workspace,
    fake: FakeModelServer,
    actor,
    *,
    tier: str,
    original_request: str = ORIGINAL_REQUEST,
    finished: bool = True,
):
    """The sample repository in `workspace`, reviewed on the fake model: returns a function
    that runs one round to its end (`tier`, `original_request` overridable) and returns it.
    With `finished`, a round that did not finish fails the test with its error."""
    from reviews.pipeline.runner import run_inline
    from reviews.services.requests import review_request
    from reviews.sources.sample_repo import create_sample_repository
    from workspaces.models import Repository

    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    model_settings(settings, fake)
    path = tmp_path / "shop"
    base, head = create_sample_repository(path)
    repo = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(path.resolve())
    )

    def review(tier: str = tier, original_request: str = original_request):
        review_round = review_request(
            repository=repo,
            actor=actor,
            base=base,
            head=head,
            tier=tier,
            original_request=original_request,
            queue=False,
        )
        done = run_inline(review_round.pk)
        if finished:
            assert done.state == "finished", done.error
        return done

    return review
