"""One defect, one finding, whoever found it (issue 11, items 1 and 2).

The sample shop as a GitHub pull request on the faithful fake, the thorough tier, five scripted
model reviewers that all flag the SQL line (in their own words and priorities) plus bandit and
the secret scanner: one active canonical finding per defect location crediting everyone, at
most one disagreement per location, one card per finding on the page, and exactly one inline
comment per canonical finding on GitHub. Then a person decides the SQL line's disagreement.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from guardrails.models import AuditEvent
from reviews.models import ReviewNode, ReviewRound
from reviews.pipeline.runner import run_inline
from reviews.reports.json_export import review_json
from reviews.selectors import node_view, review_page
from reviews.services.publishing import publish_review
from reviews.services.requests import review_request
from reviews.services.rounds import round_start
from reviews.sources.sample_repo import BASE_FILES, FEATURE_FILES
from tests.fakes.model_server import good_findings, sample_finding
from tests.fixtures import use_fake_github
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "shop/search.py"
SQL_LINE, KEY_LINE, SHELL_LINE, EXCEPT_LINE = 12, 7, 18, 20
SECURITY = {"category": "security", "severity": "critical", "effort": "small"}

# Every reviewer flags the SQL line, each in its own words; performance underrates it.
SQL_TITLES = {
    "implementation": ("SQL injection in search_products", "P0", "bug"),
    "quality": ("SQL string formatted with the search term", "P0", "bug"),
    "architecture": ("Raw SQL from user input", "P0", "bug"),
    "security": ("SQL query built from the search term", "P0", "bug"),
    "performance": ("Query formatted from the term on every call", "P3", "suggestion"),
}


def _sql(name: str) -> dict:
    title, priority, kind = SQL_TITLES[name]
    return sample_finding(
        PATH,
        SQL_LINE,
        type=kind,
        title=title,
        body=f"{name}: the term is formatted into the statement; bind it as a parameter.",
        priority=priority,
        confidence=0.9,
        triage=SECURITY,
    )


def _extra(name: str) -> list[dict]:
    if name == "security":
        return [
            sample_finding(
                PATH,
                KEY_LINE,
                title="API key committed in the source",
                body="The live key is readable by anyone with the repository; rotate it.",
                priority="P1",
                confidence=0.9,
                triage=SECURITY,
            ),
            sample_finding(PATH, SHELL_LINE, priority="P0", confidence=0.9, triage=SECURITY),
        ]
    if name == "implementation":
        return [
            sample_finding(
                PATH,
                EXCEPT_LINE,
                title="Exception swallowed by except/pass",
                body="A failed export is silently ignored: log it or let it raise.",
                priority="P2",
                confidence=0.8,
                triage={"category": "stability", "severity": "medium", "effort": "small"},
            )
        ]
    return []


@pytest.fixture
def reviewed(fake_github, git_repo_factory, fake_model, settings, workspace, alice, tmp_path):
    scenario.model_settings(settings, fake_model)
    scenario.install(
        fake_model,
        overrides={
            name: good_findings([_sql(name), *_extra(name)], path=PATH, name=name)
            for name in SQL_TITLES
        },
    )
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    use_fake_github(settings, fake_github)
    repo = git_repo_factory("shop")
    repo.commit("base", BASE_FILES, branch="main")
    repo.commit("feature", FEATURE_FILES, branch="feature")
    fake_github.add_repo("acme", "shop", repo.path)
    fake_github.add_pull("acme", "shop", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop"
    )
    review_round = run_inline(
        review_request(
            repository=repository, actor=alice, number=7, tier="thorough", queue=False
        ).pk
    )
    assert review_round.state == ReviewRound.State.FINISHED, review_round.error
    return review_round


def _active_canonical(review_round) -> list[ReviewNode]:
    return list(
        ReviewNode.objects.filter(
            round=review_round,
            duplicate_of__isnull=True,
            status__in=["open", "consensus_ready"],
        ).select_related("stream")
    )


def _at(nodes, line):
    return [n for n in nodes if n.path == PATH and n.start_line <= line <= n.end_line]


def test_one_canonical_finding_per_location_crediting_everyone(reviewed, client_for, alice):
    canonical = _active_canonical(reviewed)
    for line in (SQL_LINE, KEY_LINE, SHELL_LINE, EXCEPT_LINE):
        assert len(_at(canonical, line)) == 1, (line, [(n.title, n.stream.name) for n in canonical])
    [sql] = _at(canonical, SQL_LINE)
    reviewers = set(node_view(sql).reviewers)
    assert reviewers == {*SQL_TITLES, "bandit"}
    assert sql.priority == "P0"  # the highest priority, never lowered by bandit's P2 or a P3
    assert ReviewNode.objects.filter(round=reviewed, duplicate_of=sql).count() == 5
    b608 = ReviewNode.objects.get(round=reviewed, title__startswith="B608")
    assert b608.duplicate_of_id == sql.pk
    # Analyzer findings joined the model's at the other places too.
    [key] = _at(canonical, KEY_LINE)
    assert {"security", "secrets"} <= set(node_view(key).reviewers)
    [swallowed] = _at(canonical, EXCEPT_LINE)
    assert {"implementation", "bandit"} <= set(node_view(swallowed).reviewers)

    page = review_page(space=reviewed.space)
    seen = [c for d in page.disagreements for c in d.canonical_ids]
    assert len(seen) == len(set(seen))  # at most one disagreement per location
    [sql_conflict] = [d for d in page.disagreements if d.key == str(sql.pk)]
    # bandit's side depends on its severity table; the four model reviewers say P0 bug.
    assert {"implementation", "quality", "architecture", "security"} <= set(
        sql_conflict.first_reviewers
    )
    assert sql_conflict.second_reviewers == ("performance",)
    exported = [d for d in review_json(page)["disagreements"] if d["key"] == sql.pk]
    assert [d["second_reviewers"] for d in exported] == [["performance"]]

    html = client_for(alice).get(
        reverse("reviews:detail", args=[reviewed.space.workspace.slug, reviewed.space_id])
    )
    text = html.content.decode()
    cards = re.findall(r'<article class="node[^"]*" id="(?:diff-)?node-(\d+)"', text)
    assert len(cards) == len(set(cards))  # each finding once, in the diff or in the list
    assert set(cards) == {
        str(n.pk) for n in ReviewNode.objects.filter(round=reviewed, duplicate_of=None)
    }
    assert "duplicate of" not in text
    assert f"found by {', '.join(node_view(sql).reviewers)}" in text
    assert text.count('class="disagreement"') == len(page.disagreements)


def test_the_publisher_posts_one_inline_comment_per_canonical_finding(reviewed, fake_github, alice):
    record = publish_review(
        space=reviewed.space, selection="all_open", approve_on_ship=True, actor=alice
    )
    assert record.state == "posted", record.error if hasattr(record, "error") else record
    [posted] = fake_github.reviews("acme", "shop", 7)
    places = [(c["path"], c["line"]) for c in posted["comments"]]
    assert len(places) == len(set(places)), places  # never two comments on one line
    assert sorted(record.plan["inline"]) == sorted(
        n.pk for n in _active_canonical(reviewed) if n.path
    )
    assert len(posted["comments"]) == len(record.plan["inline"])
    duplicates = ReviewNode.objects.filter(round=reviewed, duplicate_of__isnull=False)
    assert all(d.pk not in record.plan["inline"] for d in duplicates)


def test_a_person_decides_the_disagreement(reviewed, client_for, alice, member_factory):
    space = reviewed.space
    [sql] = _at(_active_canonical(reviewed), SQL_LINE)
    url = reverse("reviews:disagreement_decide", args=[space.workspace.slug, space.pk, sql.pk])
    viewer = member_factory(space.workspace, "viewer", "vic@example.com")
    assert client_for(viewer).post(url, {"decision": "second"}).status_code == 403
    sql.refresh_from_db()
    assert sql.priority == "P0"

    # A push meanwhile: the person decides on round 1, read in the switcher, and comes back to it.
    round_start(space=space, head_sha="f" * 40, tier="light")
    response = client_for(alice).post(url, {"decision": "first", "reason": "exploitable"})
    assert response.status_code == 302
    assert response["Location"].endswith(f"/reviews/{space.pk}/?round=1#disagreements")
    nodes = ReviewNode.objects.filter(round=reviewed).filter(pk=sql.pk) | sql.duplicates.all()
    assert {(n.priority, n.type) for n in nodes} == {("P0", "bug")}
    decided = review_page(space=space, round_number=1).disagreements
    assert not any(d.key == str(sql.pk) for d in decided)
    event = AuditEvent.objects.get(action="disagreement.decided")
    assert event.actor_label == alice.email
    assert event.payload["sides"]["second"]["reviewers"] == ["performance"]
    # Decided: a second decision finds nothing to decide (the API says so as a 400).
    api = client_for(alice).post(
        f"/api/v1/workspaces/{space.workspace.slug}/reviews/{space.pk}/disagreements/{sql.pk}"
        "/decide",
        {"decision": "dismiss", "reason": "not ours"},
        content_type="application/json",
    )
    assert api.status_code in (400, 404), api.content


def test_dismissing_a_disagreement_dismisses_its_findings_through_the_api(reviewed, client_for):
    space = reviewed.space
    [sql] = _at(_active_canonical(reviewed), SQL_LINE)
    owner = client_for(space.workspace.memberships.get(role="owner").user)
    url = (
        f"/api/v1/workspaces/{space.workspace.slug}/reviews/{space.pk}/disagreements/{sql.pk}"
        "/decide"
    )
    assert str(sql.pk) in {str(c) for c in reviewed.verdict.contributing}  # a P0 decides it
    refused = owner.post(url, {"decision": "dismiss"}, content_type="application/json")
    assert refused.status_code == 400 and "why" in refused.json()["detail"]
    response = owner.post(
        url, {"decision": "dismiss", "reason": "test fixture"}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["nodes"] == [
        {"id": sql.pk, "priority": "P0", "type": "bug", "status": "dismissed", "duplicate_of": None}
    ]
    sql.refresh_from_db()
    assert sql.status == "dismissed"
    assert AuditEvent.objects.filter(action="node.dismissed", target_id=str(sql.pk)).exists()
    # The verdict was decided again without it (nor any of its duplicates).
    reviewed.verdict.refresh_from_db()
    merged = {str(sql.pk), *(str(d.pk) for d in sql.duplicates.all())}
    assert not merged & {str(c) for c in reviewed.verdict.contributing}
    # Its duplicates went with it: no card, no disagreement, nothing to publish for the line.
    page = review_page(space=space)
    assert not any(d.key == str(sql.pk) for d in page.disagreements)
    assert not _at(_active_canonical(reviewed), SQL_LINE)
