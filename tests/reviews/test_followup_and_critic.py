"""The critic, the follow-up reviewer, the panel's cost guard and fast mode, in real rounds on
the sample repository against the fake model server. What the fake received is the evidence:
which findings the lenses were asked about, whether the critic was asked at all."""

from __future__ import annotations

import re

import pytest

from reviews.agents.prompts import VERIFIER_PANEL
from reviews.models import NodeConfirmation, PipelineStep, ReviewerStream, ReviewNode
from reviews.reports.markdown import report_markdown
from reviews.selectors import node_view, review_page
from tests.fakes.model_server import Fail, Script, answer, good_findings, sample_finding, text
from tests.reviews import pipeline_scenarios as scenario

pytestmark = pytest.mark.django_db(transaction=True)

UNTRUSTED = re.compile(r"<<<UNTRUSTED (\w+)[^\n]*>>>.*?<<<END UNTRUSTED \1>>>", re.S)


@pytest.fixture
def shop(settings, tmp_path, workspace, fake_model, alice):
    return scenario.sample_reviews(
        settings,
        tmp_path,
        workspace,
        fake_model,
        alice,
        tier="thorough",
        original_request="Add product search and order deletion.",
    )


def _system(request) -> str:
    messages = (request.json or {}).get("messages") or []
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else str(m.get("content"))
        for m in messages
        if m.get("role") in ("system", "developer")
    )


def _user(request) -> str:
    messages = (request.json or {}).get("messages") or []
    return "\n".join(str(m.get("content")) for m in messages if m.get("role") == "user")


def _lens_requests(fake, about: str) -> list:
    """Requests to a verification lens whose finding mentions `about`."""
    return [r for r in fake.recorded() if _is_lens(r) and about in _user(r)]


def _is_lens(request) -> bool:
    return _system(request) == VERIFIER_PANEL


def _critic_requests(fake) -> list:
    return [r for r in fake.recorded() if scenario.CRITIC in _system(r)]


def _follow_ups(review_round) -> list[str]:
    return sorted(
        review_round.streams.filter(name__startswith="followup-").values_list("name", flat=True)
    )


FOLLOW_UP_BODY = (
    "The search term from the query string is formatted straight into the SQL text of "
    "search_products, so a term such as x' OR 1=1 -- returns every product and a crafted one "
    "can read other tables; pass the term as a parameter (LIKE ? with '%' || ? || '%') instead "
    "of interpolating it, as order_total already does. search_view passes request.GET['q'] "
    "unchanged, so the endpoint is reachable by any caller; the LIKE pattern also needs its own "
    "escaping of '%' and '_' once the term is a parameter, or a search for '_' matches everything."
)


def test_a_follow_up_finding_goes_through_the_lead_pass_and_the_panel(shop, fake_model):
    """Balanced tier, and a critic that judges performance needed: a performance follow-up
    runs; its P0 finding merges with the same defect found earlier and the lenses verify the
    merged finding. Findings the first panel verified are not asked about again."""
    scenario.install(fake_model)
    scenario.critic_asks_for(fake_model, "performance")
    fake_model.add_script(
        good_findings(
            [{**scenario.sql_finding(), "body": FOLLOW_UP_BODY}],
            path="shop/search.py",
            name="fu-perf",
        ),
        marker="You are the followup-performance reviewer.",
    )
    review_round = shop(tier="balanced")
    assert review_round.stats.critic.follow_up == "performance"
    assert _follow_ups(review_round) == ["followup-performance"]
    assert review_round.streams.get(name="followup-performance").state == "done"

    followed = ReviewNode.objects.get(round=review_round, stream__name="followup-performance")
    first = ReviewNode.objects.get(round=review_round, stream__name="implementation")
    # The lead pass merged them; the follow-up's text is the most detailed, so it leads.
    assert followed.duplicate_of_id is None and first.duplicate_of_id == followed.pk
    assert followed.priority == "P0"
    assert {"implementation", "followup-performance", "bandit"} <= set(
        node_view(followed).reviewers
    )
    # The panel verified it: the fake was asked about it by each lens.
    assert len(_lens_requests(fake_model, "formatted straight into the SQL text")) == 3
    lenses = set(NodeConfirmation.objects.filter(node=followed).values_list("agent", flat=True))
    assert {"lens-reachability", "lens-false_positive", "lens-severity"} <= lenses
    assert followed.tags.panel == "confirmed"
    steps = PipelineStep.objects.filter(round=review_round, stage="followup_panel")
    assert [(s.key, s.nodes) for s in steps] == [(f"group-{followed.pk}", [followed.pk])]
    # The quality finding went through the first panel once, and was not verified again.
    assert len(_lens_requests(fake_model, "Name the export target explicitly")) == 3
    assert {"followup_consolidate", "finalise"} <= set(review_round.done_stages)


def test_the_critic_names_one_follow_up_from_the_rules_and_its_model(shop, fake_model):
    """The model judges three more dimensions warranted: all are recorded as missing, one
    follow-up runs (requirements first: the implementation reviewer checked security, as the
    change's high-risk patterns ask). The pull request's text reaches the critic fenced."""
    scenario.install(fake_model)
    fake_model.add_script(
        Script(
            "critic-wide",
            (
                answer(
                    warranted=["performance", "requirements", "architecture"],
                    gaps=["Nobody read shop/views.py for access control."],
                ),
            ),
        ),
        marker=scenario.CRITIC,
    )
    review_round = shop(tier="light")
    critic = review_round.stats.critic
    assert critic.missing_dimensions == ["requirements", "performance", "architecture"]
    assert critic.judged == ["architecture", "performance", "requirements"]
    assert critic.judged_gaps == ["Nobody read shop/views.py for access control."]
    assert critic.abstained is None and critic.follow_up == "requirements"
    assert _follow_ups(review_round) == ["followup-requirements"]
    [request] = _critic_requests(fake_model)
    prompt = _user(request)
    assert "shop/search.py" in prompt and "Add product search" in prompt
    outside = UNTRUSTED.sub("", prompt)
    assert "shop/search.py" not in outside and "Add product search" not in outside


def test_a_critic_that_never_answers_in_shape_leaves_the_rules(shop, fake_model):
    """Garbage twice: an abstention, recorded; the rules' warranted set stands: security, which
    the implementation reviewer checked, so no follow-up."""
    scenario.install(fake_model)
    fake_model.add_script(
        Script("critic-garbage", (text("All good!"), text("Really, all good."))),
        marker=scenario.CRITIC,
    )
    review_round = shop(tier="light")
    critic = review_round.stats.critic
    assert critic.judged is None and critic.abstained.startswith("no valid answer")
    assert len(_critic_requests(fake_model)) == 2  # the answer, and the one retry
    assert critic.warranted == ["implementation", "security"]
    assert critic.missing_dimensions == [] and critic.follow_up is None
    assert _follow_ups(review_round) == []


def test_when_the_reviewer_carrying_security_fails_a_security_follow_up_runs(shop, fake_model):
    """The light round's implementation reviewer carries the security check; its provider
    fails twice, so security did not run after all: the critic calls the follow-up reviewer,
    whose request has the security brief, and its finding reaches the panel."""
    scenario.install(
        fake_model,
        overrides={"implementation": Script("impl-down", (Fail(500), Fail(500)) * 4)},
    )
    fake_model.add_script(
        good_findings([scenario.permission_finding()], path="shop/views.py", name="fu-sec"),
        marker="You are the followup-security reviewer.",
    )
    review_round = shop(tier="light")
    assert review_round.streams.get(name="implementation").state == "failed"
    critic = review_round.stats.critic
    assert critic.missing_dimensions == ["security", "implementation"]
    assert critic.follow_up == "security"
    assert review_round.streams.get(name="followup-security").state == "done"
    first = next(r for r in fake_model.recorded() if r.script == "fu-sec")
    assert "Security brief: authentication" in first.body
    found = ReviewNode.objects.get(round=review_round, stream__name="followup-security")
    assert found.title == "Order deletion has no permission check"
    assert len(_lens_requests(fake_model, "Order deletion has no permission check")) == 3


def _quality_nits():
    """26 plain, confident minor findings at distinct lines: past the panel's cost guard."""
    lines = [("shop/search.py", n) for n in range(1, 12)] + [
        ("shop/views.py", n) for n in range(1, 16)
    ]
    return [
        sample_finding(
            path,
            line,
            type="suggestion",
            title=f"Nit number {i} {'abcdefghijklmnopqrstuvwxyz'[i]}",
            body=f"Minor remark {i}.",
            priority="P3",
            confidence=0.9,
            triage={"category": "maintainability", "severity": "low", "effort": "small"},
        )
        for i, (path, line) in enumerate(lines)
    ]


def _swallowed(priority, severity):
    return sample_finding(
        "shop/search.py",
        19,
        type="bug",
        title="Export failure swallowed by except/pass",
        body="A failed export is silently ignored: log it or let it raise.",
        priority=priority,
        confidence=0.9,
        triage={"category": "correctness", "severity": severity, "effort": "small"},
    )


def test_past_the_cost_guard_a_finding_rated_two_ways_is_still_verified(shop, fake_model):
    """Over 25 findings the panel narrows: plain minor findings pass through unverified, but a
    minor finding whose reviewers disagreed on its severity (P2 and P3) is verified."""
    scenario.install(
        fake_model,
        overrides={
            "quality": good_findings(_quality_nits(), path="shop/search.py", name="nits"),
            "implementation": good_findings(
                [_swallowed("P2", "medium")], path="shop/search.py", name="impl"
            ),
            "architecture": good_findings(
                [_swallowed("P3", "low")], path="shop/search.py", name="arch"
            ),
        },
    )
    review_round = shop(tier="balanced")
    assert review_round.stats.panel_narrowed
    canonical = ReviewNode.objects.get(round=review_round, stream__name="implementation")
    duplicate = ReviewNode.objects.get(round=review_round, stream__name="architecture")
    assert canonical.duplicate_of_id is None and duplicate.duplicate_of_id == canonical.pk
    assert len(_lens_requests(fake_model, "Export failure swallowed")) == 3
    assert canonical.tags.panel is not None and not canonical.tags.unverified
    nits = ReviewNode.objects.filter(round=review_round, stream__name="quality")
    assert nits.count() == 26
    assert all(n.tags.unverified and n.tags.panel is None for n in nits)
    assert not _lens_requests(fake_model, "Nit number")
    report = report_markdown(review_page(space=review_round.space))
    assert "narrowed by the cost guard" in report


def test_fast_mode_skips_the_panel_and_the_critic_and_says_so(
    shop, fake_model, workspace, alice, client_for
):
    """No lens and no critic request leaves the process, no follow-up runs, every finding is
    marked unverified, and the report and the page say why."""
    workspace.panel_mode = "fast"
    workspace.save(update_fields=["panel_mode"])
    scenario.install(fake_model)
    review_round = shop(tier="light")  # the rules would call a security follow-up
    assert not [r for r in fake_model.recorded() if _is_lens(r)]
    assert not _critic_requests(fake_model)
    assert _follow_ups(review_round) == [] and review_round.stats.critic is None
    assert "critic" not in review_round.done_stages
    entered = ReviewNode.objects.filter(
        round=review_round, duplicate_of__isnull=True, confidence__gte=0.5
    )
    assert entered.exists() and all(n.tags.unverified for n in entered)
    report = report_markdown(review_page(space=review_round.space))
    assert "Verification: panel and critic skipped: fast mode." in report
    html = (
        client_for(alice)
        .get(f"/w/{workspace.slug}/reviews/{review_round.space_id}/")
        .content.decode()
    )
    section = html.split('id="review-process"')[1].split("</section>")[0]
    assert " hidden" not in section.split(">")[0]
    assert "Panel and critic skipped: fast mode." in section
    assert (
        review_round.streams.filter(kind=ReviewerStream.Kind.MODEL).count() == 1
    )  # implementation only
