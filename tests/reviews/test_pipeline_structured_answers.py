"""Answers that decide outcomes come in a shape: the verification lenses and the lead's
walkthrough, on the real pipeline against the fake model server; and a reviewer's first
pass sees no finding but its own."""

from __future__ import annotations

import json
import re
import threading

import pytest
from django.urls import reverse

from reviews.models import PipelineStep, ReviewNode
from reviews.pipeline.runner import run_inline
from reviews.reports.markdown import report_markdown
from reviews.selectors import review_page
from reviews.services.requests import review_request
from tests.fakes.model_server import (
    Conversation,
    Reply,
    Script,
    answer,
    calls,
    good_findings,
    panel_answer,
    panel_answer_bad_day,
    panel_findings,
    text,
)
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

SQL_TITLE = "SQL query built from the search term"


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    return scenario.sample_reviews(
        settings,
        tmp_path,
        workspace,
        fake_model,
        alice,
        tier="light",
        original_request="Add product search and order deletion.",
    )


def _lenses(fake, make_script) -> None:
    """Every verifier lens plays `make_script(lens)` (added last, so it wins the routing)."""
    for lens in scenario.LENS_ANSWERS:
        fake.add_script(make_script(lens), marker=f"You are the {lens} verifier")


def _lens_requests(fake, lens: str | None = None):
    return [
        r
        for r in fake.recorded()
        if r.script and r.script.startswith(f"lens-{lens or ''}") and r.status == 200
    ]


def _judged(review_round):
    """The findings the panel judged: every node carrying a panel outcome."""
    return [n for n in ReviewNode.objects.filter(round=review_round) if n.tags.panel is not None]


def _page(client, review_round) -> str:
    space = review_round.space
    response = client.get(reverse("reviews:detail", args=[space.workspace.slug, space.pk]))
    assert response.status_code == 200
    return response.content.decode()


# -- the verification lenses ---------------------------------------------------------------


def test_lenses_answering_json_inside_unusual_prose_confirm_and_filter(shop, fake_model):
    """No tool call and none of the expected wording: the JSON in the prose decides, one entry
    per ref. The SQL finding is confirmed with lens 3's severity; every other judged finding
    is filtered (an analyzer's finding on lens 2's word alone is contested instead)."""

    def prose_verdict(lens: str) -> Script:
        def reply(conversation: Conversation) -> Reply:
            found = []
            for ref, finding in panel_findings(conversation).items():
                real = SQL_TITLE in finding
                verdict = "real" if real or lens == "severity" else "false_positive"
                found.append(
                    {"ref": ref, "verdict": verdict, "severity": "critical", "reason": "traced"}
                )
            return text(
                "Right, having traced the call sites I'd put it like this —\n"
                f"```json\n{json.dumps({'verdicts': found}, indent=1)}\n```\nHappy to elaborate."
            )

        return Script(f"lens-{lens}", (reply,))

    findings = [scenario.sql_finding(), scenario.naming_finding()]
    scenario.install(
        fake_model,
        overrides={"implementation": good_findings(findings, path="shop/search.py", name="impl")},
    )
    _lenses(fake_model, prose_verdict)
    review_round = shop()

    judged = _judged(review_round)
    sql = next(n for n in judged if n.title == SQL_TITLE)
    others = [n for n in judged if n.pk != sql.pk]
    by_rule = [n for n in others if n.tags.analyzer is not None]
    by_model = [n for n in others if n.tags.analyzer is None]
    assert by_rule and by_model, "the sample change has model and analyzer findings besides"
    assert (sql.tags.panel, sql.severity, sql.priority) == ("confirmed", "critical", "P0")
    assert {(n.tags.panel, n.status) for n in by_model} == {("filtered", "dismissed")}
    # Lens 1 was not asked about an analyzer's finding: lens 2's word alone contests it.
    assert {(n.tags.panel, n.status) for n in by_rule} == {("contested", "open")}
    assert all(
        "reachability not asked of a model: the analyzer's rule" in n.tags.panel_note
        for n in by_rule
    )
    # Each lens answered its group in one call: prose was read, never sent back for a retry.
    requests = _lens_requests(fake_model)
    assert len(requests) == 3
    reachability = next(r for r in requests if r.script == "lens-reachability")
    assert all(n.title not in reachability.body for n in by_rule)
    assert all(n.title in reachability.body for n in [sql, *by_model])
    panel = review_round.stats.panel
    assert (panel.verified, panel.filtered, panel.contested) == (
        1,
        len(by_model),
        len(by_rule),
    )


def test_a_lens_on_a_bad_day_costs_only_the_finding_it_left_out(shop, fake_model):
    """Lens 2 answers in prose, its refs reversed, one finding left out and an unknown ref
    added: the finding it left out has only lens 1's verdict (contested, with the reason); the
    verdicts it gave stand, each on the finding its ref names."""
    scenario.install(fake_model)
    fields = scenario.LENS_ANSWERS["false_positive"]
    fake_model.add_script(
        Script(
            "lens-false_positive",
            (
                panel_answer_bad_day(
                    lambda ref, finding: fields, missing=lambda finding: SQL_TITLE in finding
                ),
            ),
        ),
        marker="You are the false_positive verifier",
    )
    review_round = shop()

    judged = _judged(review_round)
    sql = next(n for n in judged if n.title == SQL_TITLE)
    others = [n for n in judged if n.pk != sql.pk]
    assert others
    # Lens 1's REAL still counts as a peer's confirmation.
    assert sql.tags.panel == "contested" and sql.status == "consensus_ready"
    assert sql.tags.panel_note.startswith("only 1 valid verdict (false_positive: abstained: ")
    assert "the answer gave no verdict for F" in sql.tags.panel_note
    assert {n.tags.panel for n in others} == {"confirmed"}
    for node in others:
        agents = set(node.confirmations.values_list("agent", flat=True))
        assert "lens-false_positive" in agents
    assert not sql.confirmations.filter(agent="lens-false_positive").exists()
    # The one call was not sent back: the answer's usable part was read as it came.
    assert len(_lens_requests(fake_model, "false_positive")) == 1


def test_lenses_answering_garbage_leave_the_findings_unverified_with_the_reason(
    shop, fake_model, client_for, alice
):
    """A bad shape, then prose with no JSON: every lens abstains. The findings stay, open,
    counted as unverified, the reason on the card; nothing is filtered or called contested."""
    scenario.install(fake_model)
    _lenses(
        fake_model,
        lambda lens: Script(
            f"lens-{lens}",
            (answer(verdict="maybe", severity="huge"), text("Hard to say, it depends.")),
        ),
    )
    review_round = shop()

    judged = _judged(review_round)
    assert judged and {n.tags.panel for n in judged} == {"unverified"}
    sql = next(n for n in judged if n.title == SQL_TITLE)
    assert sql.status == "open" and sql.tags.unverified
    note = sql.tags.panel_note
    assert note.startswith("no lens gave a valid verdict (reachability: abstained: no valid")
    assert "false_positive: abstained" in note
    panel = review_round.stats.panel
    assert (panel.verified, panel.filtered, panel.contested) == (0, 0, 0)
    assert panel.unverified >= len(judged)

    html = _page(client_for(alice), review_round)
    card = re.search(rf'<article[^>]*id="(?:diff-)?node-{sql.pk}".*?</article>', html, flags=re.S)
    assert card and "Verification panel: no lens gave a valid verdict" in card.group(0)
    report = report_markdown(review_page(space=review_round.space))
    assert SQL_TITLE in report.split("## Issues")[1]  # still reported, still counted
    assert f"0 contested, {panel.unverified} unverified" in report


def test_a_lens_whose_first_reply_fails_validation_is_confirmed_on_its_retry(shop, fake_model):
    """A first reply in the wrong shape (one verdict, no entries by ref) goes back to the model
    with the validation error; its corrected answer counts."""
    scenario.install(fake_model)
    fields = {"verdict": "real", "severity": "high", "reason": "reaches the query"}
    fake_model.add_script(
        Script(
            "lens-reachability",
            (answer(**fields), panel_answer(lambda ref, finding: fields)),
        ),
        marker="You are the reachability verifier",
    )
    review_round = shop()

    sql = ReviewNode.objects.get(round=review_round, title=SQL_TITLE, duplicate_of=None)
    assert sql.tags.panel == "confirmed"
    assert sql.confirmations.get(agent="lens-reachability").reason == "reaches the query"
    retries = [
        r
        for r in _lens_requests(fake_model, "reachability")
        if SQL_TITLE in r.body and len(r.json["messages"]) > 2
    ]
    assert retries, "the retry never reached the model"
    told = retries[0].json["messages"][-1]
    assert told["role"] == "tool" and '"loc":["verdicts"],"msg":"Field required"' in told["content"]


def _offered(request) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools", [])}


def test_lenses_judge_a_group_in_one_call_each_with_the_code_in_the_prompt(shop, fake_model):
    """One panel step for the light round's findings; every lens call lists its findings by
    ref with their code, and offers no code tool: the excerpts are there."""
    scenario.install(fake_model)
    review_round = shop()

    judged = _judged(review_round)
    steps = PipelineStep.objects.filter(round=review_round, stage="panel")
    assert [sorted(s.nodes) for s in steps] == [sorted(n.pk for n in judged)]
    requests = _lens_requests(fake_model)
    assert sorted(r.script for r in requests) == [
        "lens-false_positive",
        "lens-reachability",
        "lens-severity",
    ]
    groups = {}
    for request in requests:
        assert _offered(request) == {"final_answer"}
        group, lens = (part["text"] for part in request.json["messages"][1]["content"])
        assert "\n## F" in group and "<<<UNTRUSTED" in group
        # The code the findings cite goes out once per file, however many cite it.
        assert group.count("source=code shop/search.py>>>") == 1
        assert "You are the" not in group and lens.startswith("## Your lens\n\nYou are the")
        groups[request.script] = group
    # One system prompt for the three lenses, and one group text for the lenses given the same
    # findings: the lens's own paragraph comes last, after a prefix a provider caches.
    assert len({r.json["messages"][0]["content"] for r in requests}) == 1
    assert groups["lens-false_positive"] == groups["lens-severity"]


def test_a_finding_without_lines_brings_the_code_tools_back(shop, fake_model):
    """A PR-wide finding has no excerpt: the lenses judging its group may read the code."""
    pr_wide = {**scenario.sql_finding(), "title": "Nothing logs a failed search"}
    for field in ("path", "start_line", "end_line"):
        del pr_wide[field]
    scenario.install(
        fake_model,
        overrides={
            "implementation": good_findings(
                [scenario.sql_finding(), pr_wide], path="shop/search.py", name="impl"
            )
        },
    )
    review_round = shop()

    node = ReviewNode.objects.get(round=review_round, title="Nothing logs a failed search")
    assert not node.path and node.tags.panel == "confirmed"
    asked = [r for r in _lens_requests(fake_model) if node.title in r.body]
    assert len(asked) == 3
    assert all("read" in _offered(r) for r in asked)


# -- independent first opinions --------------------------------------------------------------


def test_a_reviewers_first_pass_sees_no_finding_but_its_own(shop, fake_model):
    """Two reviewers record, wait for each other, then try to list the findings: a first pass
    is offered no list (and no confirm) tool, so the peer's finding never reaches it. What
    each was shown is the tool result the fake model received."""
    both_recorded = threading.Barrier(2, timeout=20)
    shown: dict[str, str] = {}

    def reviewer(name: str, finding: dict) -> Script:
        def list_after_peer(conversation: Conversation) -> Reply:
            both_recorded.wait()  # the peer's finding is in the database now
            return calls(("list_review_nodes", {}))

        def finish(conversation: Conversation) -> Reply:
            [result] = conversation.last_results
            shown[name] = result.content
            return text("Examined shop/search.py.")

        return Script(name, (calls(("add_review_node", finding)), list_after_peer, finish))

    scenario.install(
        fake_model,
        overrides={
            "implementation": reviewer("impl", scenario.sql_finding()),
            "quality": reviewer("quality", scenario.naming_finding()),
        },
    )
    scenario.critic_asks_for(fake_model, "performance")  # a follow-up reviewer, too
    review_round = shop(tier="balanced")

    titles = {
        stream: set(
            ReviewNode.objects.filter(round=review_round, stream__name=stream).values_list(
                "title", flat=True
            )
        )
        for stream in ("implementation", "quality")
    }
    assert all(titles.values())
    assert set(shown) == {"impl", "quality"}
    for title in titles["quality"]:
        assert title not in shown["impl"]
    for title in titles["implementation"]:
        assert title not in shown["quality"]

    def tools(script: str) -> set[str]:
        return {
            tool["function"]["name"]
            for r in fake_model.recorded()
            if r.script == script
            for tool in r.json.get("tools", [])
        }

    # Nothing to list or confirm, for a first pass or the follow-up: it is offered the first
    # pass's tools (their requests share a prefix).
    assert not {"list_review_nodes", "confirm_review_node"} & tools("impl")
    assert tools("followup") == tools("impl")


# -- the lead's walkthrough ----------------------------------------------------------------


def test_the_lead_walks_through_the_cohorts_and_never_sees_a_finding(
    shop, fake_model, client_for, alice
):
    scenario.install(fake_model)
    review_round = shop()

    [lead] = [r for r in fake_model.recorded() if r.script == "lead"]
    assert "shop/search.py" in lead.body and "shop/views.py" in lead.body
    for node in ReviewNode.objects.filter(round=review_round):
        assert node.title not in lead.body and node.body not in lead.body
    steps = review_round.stats.walkthrough_steps
    assert [(s.title, s.paths) for s in steps] == [
        ("Product search", ["shop/search.py"]),
        ("HTTP handlers", ["shop/views.py"]),  # the invented shop/routes.py is dropped
    ]
    assert review_round.stats.walkthrough is None

    html = _page(client_for(alice), review_round)
    card = re.search(r'<section[^>]*id="review-walkthrough".*?</section>', html, flags=re.S)
    assert card and "<strong>HTTP handlers</strong>" in card.group(0)
    assert "Exposes search and order deletion as views." in card.group(0)
    report = report_markdown(review_page(space=review_round.space))
    walkthrough = report.split("## Walkthrough")[1].split("## Issues")[0]
    assert "2. **HTTP handlers** — `shop/views.py`" in walkthrough


def test_without_a_valid_answer_the_deterministic_walkthrough_stays(shop, fake_model):
    scenario.install(fake_model)
    fake_model.add_script(
        Script("lead", (text("A tidy change overall."),)), marker=scenario.LEAD_MARKER
    )
    review_round = shop()

    assert len([r for r in fake_model.recorded() if r.script == "lead"]) == 2  # one retry
    assert review_round.stats.walkthrough_steps is None
    assert "shop/search.py" in review_round.stats.walkthrough
    assert "finding(s)" in review_round.stats.walkthrough


def test_a_fast_exit_round_makes_no_walkthrough_call(
    settings, tmp_path, workspace, fake_model, alice
):
    from tests.fakes.gitrepo import GitRepo

    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    scenario.model_settings(settings, fake_model)
    scenario.install(fake_model)
    repo = GitRepo.init(tmp_path / "docs")
    repo.commit("base", {"README.md": "hello\n", "app.py": "x = 1\n"}, branch="main")
    repo.commit("docs", {"README.md": "hello, world\n"}, branch="docs")
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(repo.path.resolve())
    )
    review_round = run_inline(
        review_request(repository=repository, actor=alice, base="main", head="docs", queue=False).pk
    )

    assert review_round.state == "finished", review_round.error
    assert review_round.facts.fast_exit and review_round.facts.model_configured
    assert not [r for r in fake_model.recorded() if r.script == "lead"]
    assert review_round.stats.walkthrough_steps is None
