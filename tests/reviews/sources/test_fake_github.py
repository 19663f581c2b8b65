"""The fake GitHub enforces GitHub's REST contract, so tests against it can fail."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes import github_server as gh

HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "tests",
    "Authorization": "Bearer ghp_alice",
}


@pytest.fixture
def fake(fake_github, git_repo_factory):
    repo = git_repo_factory()
    body = "".join(f"line {i}\n" for i in range(1, 31))
    repo.commit("base", {"a.txt": body, "img.bin": b"\x00\x01"}, branch="main")
    repo.commit(
        "change",
        {
            "a.txt": body.replace("line 2\n", "LINE 2\n").replace("line 28\n", "LINE 28\n"),
            "img.bin": b"\x00\x02",
        },
        branch="feature",
    )
    fake_github.add_token("ghp_alice", login="alice")
    fake_github.add_token("ghp_bob", login="bob")
    fake_github.add_repo("acme", "app", repo.path)
    fake_github.add_pull("acme", "app", 1, base="main", head="feature", author="bob")
    fake_github.git_repo = repo
    return fake_github


def post_review(fake, payload, who="ghp_alice"):
    return httpx.post(
        f"{fake.base_url}/repos/acme/app/pulls/1/reviews",
        json=payload,
        headers={**HEADERS, "Authorization": f"Bearer {who}"},
    )


def test_it_requires_a_user_agent_and_a_known_api_version(fake):
    """No User-Agent → 403; an unsupported X-GitHub-Api-Version → 400."""
    parts = urlsplit(fake.base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    conn.putrequest("GET", "/repos/acme/app/pulls/1", skip_accept_encoding=True)
    conn.putheader("Authorization", "Bearer ghp_alice")
    conn.endheaders()
    assert conn.getresponse().status == 403
    conn.close()
    resp = httpx.get(
        f"{fake.base_url}/repos/acme/app/pulls/1",
        headers={**HEADERS, "X-GitHub-Api-Version": "1999-01-01"},
    )
    assert resp.status_code == 400


def test_it_rejects_unknown_tokens(fake):
    """Every API request is authenticated: a bad token is 401 Bad credentials."""
    resp = httpx.get(
        f"{fake.base_url}/repos/acme/app/pulls/1",
        headers={**HEADERS, "Authorization": "Bearer wrong"},
    )
    assert resp.status_code == 401 and resp.json()["message"] == "Bad credentials"


def test_it_serves_files_like_github(fake):
    """patch starts at @@ and is absent for binaries; per_page is capped at 100."""
    resp = httpx.get(f"{fake.base_url}/repos/acme/app/pulls/1/files?per_page=500", headers=HEADERS)
    files = {f["filename"]: f for f in resp.json()}
    assert files["a.txt"]["patch"].startswith("@@ ")
    assert (files["a.txt"]["additions"], files["a.txt"]["deletions"]) == (2, 2)
    assert "patch" not in files["img.bin"]
    assert fake.requests[-1].query["per_page"] == ["500"] and "Link" not in resp.headers


@pytest.mark.parametrize(
    ("payload", "token", "error"),
    [
        ({"event": "APPROVE", "body": "lgtm"}, "ghp_bob", gh.OWN_APPROVE),
        ({"event": "REQUEST_CHANGES", "body": "no"}, "ghp_bob", gh.OWN_REQUEST_CHANGES),
        ({"event": "REQUEST_CHANGES", "body": ""}, "ghp_alice", gh.REQUEST_CHANGES_BODY),
        ({"event": "COMMENT", "body": ""}, "ghp_alice", gh.EMPTY_COMMENT),
        (
            {"event": "COMMENT", "comments": [{"path": "b.txt", "line": 2, "body": "x"}]},
            "ghp_alice",
            gh.PATH_INVALID,
        ),
        (
            {"event": "COMMENT", "comments": [{"path": "a.txt", "line": 15, "body": "x"}]},
            "ghp_alice",
            gh.LINE_NOT_IN_DIFF,
        ),
        (
            {"event": "COMMENT", "comments": [{"path": "img.bin", "line": 1, "body": "x"}]},
            "ghp_alice",
            gh.LINE_NOT_IN_DIFF,
        ),
        (
            {
                "event": "COMMENT",
                "comments": [
                    {"path": "a.txt", "line": 2, "side": "RIGHT", "body": "ok"},
                    {
                        "path": "a.txt",
                        "start_line": 2,
                        "start_side": "RIGHT",
                        "line": 28,
                        "side": "RIGHT",
                        "body": "two hunks",
                    },
                ],
            },
            "ghp_alice",
            gh.START_NOT_IN_HUNK,
        ),
    ],
)
def test_it_validates_reviews_like_github(fake, payload, token, error):
    """Each documented rejection answers 422 with GitHub's body and creates nothing."""
    resp = post_review(fake, payload, token)
    assert resp.status_code == 422
    assert resp.json()["errors"] == [error]
    assert fake.reviews("acme", "app", 1) == []


def test_it_accepts_valid_reviews_and_answers_200(fake):
    """COMMENT on one's own PR is allowed; LEFT and multi-line anchors in one hunk pass."""
    comments = [
        {"path": "a.txt", "line": 2, "side": "LEFT", "body": "old"},
        {"path": "a.txt", "start_line": 1, "start_side": "RIGHT", "line": 4, "body": "range"},
    ]
    resp = post_review(fake, {"event": "COMMENT", "body": "", "comments": comments}, "ghp_bob")
    assert resp.status_code == 200
    assert resp.json()["state"] == "COMMENTED"
    assert post_review(fake, {"event": "APPROVE"}).json()["state"] == "APPROVED"
    assert post_review(fake, {"event": "SHIP_IT", "body": "x"}).status_code == 422
    assert post_review(fake, {"body": "draft"}).json()["state"] == "PENDING"
    second = post_review(fake, {"body": "another draft"})
    assert second.status_code == 422 and second.json()["errors"] == [gh.ONE_PENDING]


def test_it_checks_app_jwts_and_expires_installation_tokens(fake, fake_clock):
    """exp too far ahead or a foreign key → 401; tokens stop working after an hour."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    fake.configure_app(99, public, slug="quorum")
    now = int(fake_clock.time())

    def call(claims, signer=key):
        token = jwt.encode(claims, signer, algorithm="RS256")
        return httpx.post(
            f"{fake.base_url}/app/installations/1/access_tokens",
            headers={**HEADERS, "Authorization": f"Bearer {token}"},
        )

    too_far = call({"iat": now - 60, "exp": now + 11 * 60, "iss": "99"})
    assert too_far.status_code == 401 and "too far in the future" in too_far.json()["message"]
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert call({"iat": now - 60, "exp": now + 540, "iss": "99"}, other).status_code == 401
    created = call({"iat": now - 60, "exp": now + 540, "iss": "99"})
    assert created.status_code == 201
    token = created.json()["token"]
    assert created.json()["expires_at"] == time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 3600)
    )
    url = f"{fake.base_url}/repos/acme/app/pulls/1"
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    assert httpx.get(url, headers=auth).status_code == 200
    fake_clock.advance(3601)
    assert httpx.get(url, headers=auth).status_code == 401


def test_it_answers_406_when_the_diff_is_too_large(fake):
    """Over the file limit the diff media type answers 406 too_large."""
    fake.diff_file_limit = 1
    resp = httpx.get(
        f"{fake.base_url}/repos/acme/app/pulls/1",
        headers={**HEADERS, "Accept": "application/vnd.github.diff"},
    )
    assert resp.status_code == 406
    assert resp.json()["errors"] == [
        {"resource": "PullRequest", "field": "diff", "code": "too_large"}
    ]


def test_it_delivers_signed_webhooks(fake):
    """deliver_webhook posts the body with a signature the receiver can check."""
    received = {}

    class Receiver(gh.BaseHTTPRequestHandler):
        def do_POST(self):
            received["body"] = self.rfile.read(int(self.headers["Content-Length"]))
            received["headers"] = dict(self.headers)
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = gh.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = gh.threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    payload = gh.pull_request_payload(fake, "acme", "app", 1, action="opened")
    url = f"http://127.0.0.1:{server.server_address[1]}/hooks/github"
    resp = gh.deliver_webhook(url, secret=b"s3cret", event="pull_request", payload=payload)
    thread.join(5)
    server.server_close()
    assert resp.status_code == 204
    assert received["headers"]["X-Hub-Signature-256"] == gh.sign(b"s3cret", received["body"])
    assert json.loads(received["body"])["pull_request"]["head"]["ref"] == "feature"


def test_it_numbers_review_comments_and_takes_replies_only_to_a_conversations_first(fake):
    """A review's comments are listed with their ids; a reply names the top-level comment (a
    reply to a reply is refused with 422); an unknown comment is 404; an empty body 422."""
    review = post_review(
        fake,
        {
            "event": "COMMENT",
            "body": "Review",
            "comments": [{"path": "a.txt", "line": 2, "side": "RIGHT", "body": "Why caps?"}],
        },
    ).json()
    base = f"{fake.base_url}/repos/acme/app/pulls/1"
    listed = httpx.get(f"{base}/reviews/{review['id']}/comments", headers=HEADERS)
    assert listed.status_code == 200
    (comment,) = listed.json()
    assert (comment["path"], comment["line"], comment["body"]) == ("a.txt", 2, "Why caps?")
    assert comment["pull_request_review_id"] == review["id"]
    assert comment["html_url"].endswith(f"/pull/1#discussion_r{comment['id']}")
    assert "in_reply_to_id" not in comment

    reply_url = f"{base}/comments/{comment['id']}/replies"
    reply = httpx.post(reply_url, json={"body": "Shouting."}, headers=HEADERS)
    assert reply.status_code == 201
    assert reply.json()["in_reply_to_id"] == comment["id"]
    nested = httpx.post(
        f"{base}/comments/{reply.json()['id']}/replies", json={"body": "x"}, headers=HEADERS
    )
    assert nested.status_code == 422 and nested.json()["errors"][0]["field"] == "in_reply_to"
    assert httpx.post(reply_url, json={"body": " "}, headers=HEADERS).status_code == 422
    assert (
        httpx.post(f"{base}/comments/1/replies", json={"body": "x"}, headers=HEADERS).status_code
        == 404
    )
    other = httpx.get(f"{base}/reviews/1/comments", headers=HEADERS)
    assert other.status_code == 404


def test_it_takes_comments_on_a_pull_requests_conversation(fake):
    url = f"{fake.base_url}/repos/acme/app/issues/1/comments"
    made = httpx.post(url, json={"body": "Thanks!"}, headers=HEADERS)
    assert made.status_code == 201
    assert made.json()["user"]["login"] == "alice"
    assert made.json()["html_url"].endswith(f"/pull/1#issuecomment-{made.json()['id']}")
    assert fake.issue_comments("acme", "app")[0]["body"] == "Thanks!"
    assert httpx.post(url, json={"body": ""}, headers=HEADERS).status_code == 422
    missing = f"{fake.base_url}/repos/acme/app/issues/99/comments"
    assert httpx.post(missing, json={"body": "x"}, headers=HEADERS).status_code == 404
