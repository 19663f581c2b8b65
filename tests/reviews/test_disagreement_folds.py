"""Deciding a disagreement folds the losing finding into the kept one (issue 37, item 1).

The sample shop's search on the fake GitHub: security's P0 bug "SQL query built from the search
term" and architecture's P2 recommendation "Prefer the ORM for the search query" sit on
shop/search.py:12, two findings of two issues after the lead pass, and disagree. A person takes
a side: the line keeps one finding crediting both reviewers, the other's words are in its
thread, the verdict is decided again, and the GitHub review has one comment on the line.
"""

from __future__ import annotations

import pytest

from guardrails.models import AuditEvent
from reviews.models import ReviewNode, ReviewRound, ThreadMessage, VerdictChange
from reviews.selectors import node_view, review_page
from reviews.services.consolidation import round_consolidate
from reviews.services.disagreements import disagreement_decide
from reviews.services.node_recording import node_record
from reviews.services.publishing import publish_review
from reviews.services.rounds import round_start
from reviews.services.spaces import pull_request_upsert, space_get_or_create, space_status_refresh
from reviews.services.verdicts import round_finalise
from reviews.sources.sample_repo import BASE_FILES, FEATURE_FILES
from tests.fixtures import node_payload, use_fake_github
from workspaces.models import Repository

PATH, SQL_LINE, SHELL_LINE = "shop/search.py", 12, 18
LINES = {PATH: len(FEATURE_FILES[PATH].splitlines())}
REVIEWS = r"/repos/acme/shop/pulls/7/reviews"


def _at(line: int, **fields) -> dict:
    return node_payload(anchor={"path": PATH, "start_line": line, "end_line": line}, **fields)


@pytest.fixture
def search_line(fake_github, git_repo_factory, settings, workspace):
    """acme/shop#7 reviewed: the two findings on the SQL line and a shell call elsewhere."""
    repo = git_repo_factory("shop")
    repo.commit("base", BASE_FILES, branch="main")
    repo.commit("feature", FEATURE_FILES, branch="feature")
    use_fake_github(settings, fake_github)
    fake_github.add_repo("acme", "shop", repo.path)
    fake_github.add_pull("acme", "shop", 7, base="main", head="feature", author="dev")
    repository = Repository.objects.create(
        workspace=workspace, kind="github", full_name="acme/shop"
    )
    pr = pull_request_upsert(
        repository=repository,
        number=7,
        base_ref="main",
        head_ref="feature",
        head_sha=repo.sha("feature"),
    )
    space = space_get_or_create(pull_request=pr)
    review_round = round_start(space=space, head_sha=repo.sha("feature"), tier="thorough")
    security = review_round.streams.create(name="security", agent="security")
    architecture = review_round.streams.create(name="architecture", agent="architecture")
    sql = node_record(
        stream=security,
        payload=_at(
            SQL_LINE,
            priority="P0",
            confidence=0.9,
            title="SQL query built from the search term",
            body="The term is formatted into the statement: bind it as a parameter.",
            triage={"category": "security", "severity": "critical", "effort": "small"},
        ),
        file_lines=LINES,
    ).node
    orm = node_record(
        stream=architecture,
        payload=_at(
            SQL_LINE,
            type="recommendation",
            priority="P2",
            confidence=0.7,
            title="Prefer the ORM for the search query",
            body="A queryset filter on name__icontains says what the raw statement does.",
            triage={"category": "maintainability", "severity": "medium", "effort": "medium"},
            fix={"fix_prompt": "Replace the statement with Product.objects.filter(...)."},
        ),
        file_lines=LINES,
    ).node
    shell = node_record(
        stream=security,
        payload=_at(
            SHELL_LINE,
            priority="P1",
            title="Shell command built from the file name",
            body="shell=True with a formatted name runs whatever the name says.",
        ),
        file_lines=LINES,
    ).node
    round_consolidate(review_round=review_round)  # the lead pass, as the pipeline runs it
    round_finalise(review_round=review_round)
    ReviewRound.objects.filter(pk=review_round.pk).update(state=ReviewRound.State.FINISHED)
    space_status_refresh(space=space)
    for node in (sql, orm, shell):
        node.refresh_from_db()
    # Two issues at one place: both stay findings of their own, and they disagree.
    assert sql.duplicate_of_id is None and orm.duplicate_of_id is None
    [found] = review_page(space=space).disagreements
    assert found.canonical_ids == (str(sql.pk), str(orm.pk))
    return review_round, sql, orm, shell


def _canonical_at(review_round, line: int) -> list[ReviewNode]:
    return [
        n
        for n in ReviewNode.objects.filter(
            round=review_round, duplicate_of__isnull=True, status__in=["open", "consensus_ready"]
        )
        if n.path == PATH and n.start_line <= line <= n.end_line
    ]


def test_taking_a_side_folds_the_other_into_the_kept_finding(search_line, alice):
    review_round, sql, orm, _ = search_line
    assert review_round.verdict.level == "block"

    changed = disagreement_decide(
        review_round=review_round,
        key=str(sql.pk),
        decision="second",
        user=alice,
        reason="the query is parameterised by the driver",
    )

    # architecture's recommendation is kept; security's bug is folded into it.
    sql.refresh_from_db()
    orm.refresh_from_db()
    assert {n.pk for n in changed} == {sql.pk, orm.pk}
    assert (sql.duplicate_of_id, sql.tags.folded_into) == (orm.pk, orm.pk)
    assert (sql.priority, sql.type, sql.severity) == ("P2", "recommendation", "medium")
    assert sql.status == "open"  # a duplicate, not a dismissal: its reviewer's words stay
    assert [n.pk for n in _canonical_at(review_round, SQL_LINE)] == [orm.pk]
    assert node_view(orm).reviewers == ("architecture", "security")
    assert not review_page(space=review_round.space).disagreements

    # The folded finding's words, in the kept finding's thread, by its reviewer.
    [note] = ThreadMessage.objects.filter(subject=f"node:{orm.pk}")
    assert (note.source, note.author_label, note.stream_id) == (
        "reviewer",
        "security",
        sql.stream_id,
    )
    assert f"Finding #{sql.pk} (P0 bug, {PATH}:{SQL_LINE})" in note.body
    assert "SQL query built from the search term" in note.body
    assert "bind it as a parameter" in note.body
    assert alice.email in note.body

    # Audited, and the verdict decided again without the P0 (it counts through its canonical): the shell
    # call's P1 holds it.
    event = AuditEvent.objects.get(action="disagreement.decided")
    assert (event.payload["kept"], event.payload["folded"]) == (orm.pk, [sql.pk])
    assert event.payload["decision"] == "second"
    review_round.verdict.refresh_from_db()
    assert review_round.verdict.level == "hold"
    change = VerdictChange.objects.get(round=review_round)
    assert (change.old_level, change.new_level) == ("block", "hold")
    assert "folded into it" in change.reason
    assert AuditEvent.objects.filter(action="verdict.changed").exists()

    # The lead pass running again (a SARIF upload, a follow-up reviewer) keeps the fold.
    round_consolidate(review_round=review_round)
    sql.refresh_from_db()
    assert sql.duplicate_of_id == orm.pk
    assert [n.pk for n in _canonical_at(review_round, SQL_LINE)] == [orm.pk]


def test_the_published_review_has_one_comment_on_the_line(search_line, fake_github, alice):
    review_round, sql, orm, shell = search_line
    disagreement_decide(
        review_round=review_round,
        key=str(sql.pk),
        decision="first",
        user=alice,
        reason="exploitable from the search box",
    )
    orm.refresh_from_db()
    assert orm.duplicate_of_id == sql.pk and (orm.priority, orm.type) == ("P0", "bug")

    record = publish_review(
        space=review_round.space, selection="all_open", approve_on_ship=True, actor=alice
    )
    assert record.state == "posted"
    assert sorted(record.plan["inline"]) == sorted([sql.pk, shell.pk])

    # What GitHub was sent: one review, one inline comment on the SQL line, crediting both.
    [sent] = [r for r in fake_github.requests_to("POST", REVIEWS) if r.status == 200]
    on_line = [c for c in sent.json["comments"] if (c["path"], c.get("line")) == (PATH, SQL_LINE)]
    assert len(on_line) == 1, sent.json["comments"]
    [comment] = on_line
    assert "SQL query built from the search term" in comment["body"]
    assert "Prefer the ORM" not in comment["body"]
    assert "security" in comment["body"] and "architecture" in comment["body"]
    assert "Prefer the ORM" not in sent.json["body"]  # not folded into the body either
    assert len(sent.json["comments"]) == 2  # the shell call keeps its own
