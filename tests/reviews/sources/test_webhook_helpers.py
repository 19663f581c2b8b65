"""Webhook signature verification and pull_request event parsing."""

from __future__ import annotations

import pytest

from reviews.sources.webhooks import (
    WebhookPayloadError,
    parse_installation_event,
    parse_pull_request_event,
    verify_signature,
)
from tests.fakes.github_server import pull_request_payload, sign

VECTOR_SECRET = b"It's a Secret to Everybody"
VECTOR_BODY = b"Hello, World!"
VECTOR_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_it_accepts_githubs_documented_test_vector():
    """The vector from GitHub's documentation verifies."""
    assert verify_signature(VECTOR_SECRET, VECTOR_BODY, VECTOR_SIGNATURE)
    assert sign(VECTOR_SECRET, VECTOR_BODY) == VECTOR_SIGNATURE


@pytest.mark.parametrize(
    ("secret", "body", "header"),
    [
        (b"another secret", VECTOR_BODY, VECTOR_SIGNATURE),
        (VECTOR_SECRET, b"Hello, World?", VECTOR_SIGNATURE),
        (VECTOR_SECRET, VECTOR_BODY, None),
        (VECTOR_SECRET, VECTOR_BODY, ""),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_SIGNATURE.replace("sha256=", "sha1=")),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_SIGNATURE[:-1] + "0"),
        (VECTOR_SECRET, VECTOR_BODY, VECTOR_SIGNATURE.removeprefix("sha256=")),
        (b"", VECTOR_BODY, sign(b"", VECTOR_BODY)),
    ],
)
def test_it_rejects_bad_or_missing_signatures(secret, body, header):
    """Wrong secret, altered body, missing/other-algorithm header, empty secret: refused."""
    assert verify_signature(secret, body, header) is False


def _payload(action: str, *, draft: bool = False) -> dict:
    return {
        "action": action,
        "number": 9,
        "pull_request": {
            "number": 9,
            "title": "Fix",
            "draft": draft,
            "state": "open",
            "merged": False,
            "user": {"login": "bob"},
            "head": {"sha": "b" * 40, "ref": "fix"},
            "base": {"sha": "a" * 40, "ref": "main"},
        },
        "repository": {"full_name": "acme/app"},
        "sender": {"login": "bob"},
        "installation": {"id": 77},
    }


@pytest.mark.parametrize(
    ("action", "draft", "queues"),
    [
        ("opened", False, True),
        ("synchronize", False, True),
        ("reopened", False, True),
        ("ready_for_review", False, True),
        ("opened", True, False),
        ("synchronize", True, False),
        ("converted_to_draft", True, False),
        ("edited", False, False),
        ("closed", False, False),
        ("labeled", False, False),
    ],
)
def test_it_tells_which_actions_queue_a_round(action, draft, queues):
    """Only new or newly-ready code queues a round; drafts wait for ready_for_review."""
    event = parse_pull_request_event("pull_request", _payload(action, draft=draft))
    assert event is not None
    assert event.queues_round is queues
    assert (event.owner, event.repo, event.number) == ("acme", "app", 9)
    assert (event.head_sha, event.base_sha, event.installation_id) == ("b" * 40, "a" * 40, 77)


def test_it_ignores_other_events():
    """ping and push are not pull request events."""
    assert parse_pull_request_event("ping", {"zen": "Keep it logically awesome."}) is None
    assert parse_pull_request_event("push", _payload("opened")) is None


def test_it_refuses_a_malformed_pull_request_payload():
    """A pull_request delivery without its pull request is an error, not a silent skip."""
    with pytest.raises(WebhookPayloadError):
        parse_pull_request_event("pull_request", {"action": "opened"})


def test_it_reads_the_fakes_delivery_payload(fake_github, git_repo_factory):
    """The fake's payload (shaped like pulls/get) parses, with the real head SHA."""
    repo = git_repo_factory()
    repo.commit("base", {"a": "1\n"}, branch="main")
    head = repo.commit("change", {"a": "2\n"}, branch="feature")
    fake_github.add_repo("acme", "app", repo.path, installation_id=5)
    fake_github.add_pull("acme", "app", 3, base="main", head="feature", author="bob")
    payload = pull_request_payload(fake_github, "acme", "app", 3, action="synchronize")
    event = parse_pull_request_event("pull_request", payload)
    assert event.head_sha == head and event.head_ref == "feature" and event.author == "bob"
    assert event.queues_round and event.installation_id == 5


@pytest.mark.parametrize(
    ("action", "draft", "review_drafts", "queues"),
    [
        ("opened", True, True, True),
        ("synchronize", True, True, True),
        ("opened", True, False, False),
        ("opened", False, False, True),
        ("closed", True, True, False),
    ],
)
def test_a_repository_may_review_drafts(action, draft, review_drafts, queues):
    event = parse_pull_request_event("pull_request", _payload(action, draft=draft))
    assert event.queues_round_for(review_drafts=review_drafts) is queues


def test_it_reads_installation_events():
    """Which repositories an installation gained or lost; other events are not installation
    events; a payload without its installation is an error."""
    created = parse_installation_event(
        "installation",
        {
            "action": "created",
            "installation": {"id": 9, "account": {"login": "acme"}},
            "repositories": [{"full_name": "acme/app"}],
        },
    )
    assert (created.installation_id, created.account, created.added, created.removed) == (
        9,
        "acme",
        ("acme/app",),
        (),
    )
    deleted = parse_installation_event(
        "installation",
        {"action": "deleted", "installation": {"id": 9}, "repositories": [{"full_name": "a/b"}]},
    )
    assert (deleted.added, deleted.removed) == ((), ("a/b",))
    changed = parse_installation_event(
        "installation_repositories",
        {
            "action": "removed",
            "installation": {"id": 9, "account": {"login": "acme"}},
            "repositories_added": [],
            "repositories_removed": [{"full_name": "acme/old"}],
        },
    )
    assert (changed.action, changed.removed) == ("removed", ("acme/old",))
    assert parse_installation_event("pull_request", _payload("opened")) is None
    with pytest.raises(WebhookPayloadError):
        parse_installation_event("installation", {"action": "created"})
