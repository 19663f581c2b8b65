"""Request bodies over a path's cap get a 413 before they are buffered.

The server test runs the real daphne (the production server) on 127.0.0.1 and sends it a
200 MB body, once with a Content-Length and once chunked, from a generator; the client stops
sending as soon as the answer arrives. The server's resident memory must barely move.
"""

from __future__ import annotations

import asyncio
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.bodylimit import BodyCaps, BodyLimitMiddleware, body_cap, declared_length

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
CAPS = BodyCaps(webhook=25 * MB, api=10 * MB, form=1 * MB)


# -- the rule ---------------------------------------------------------------------------------


def test_caps_by_path():
    assert body_cap("/webhooks/github/", CAPS) == 25 * MB
    assert body_cap("/api/v1/workspaces/acme/reviews", CAPS) == 10 * MB
    assert body_cap("/accounts/login/", CAPS) == 1 * MB
    assert body_cap("/w/acme/webhooks/github/", CAPS) == 1 * MB  # prefixes, not substrings


def test_declared_length():
    assert declared_length([(b"content-type", b"x"), (b"content-length", b"12")]) == 12
    assert declared_length([(b"Content-Length", b" 7 ")]) == 7
    assert declared_length([(b"content-length", b"-1")]) is None
    assert declared_length([]) is None


# -- the ASGI middleware, for servers that stream bodies ---------------------------------------


async def _run(path: str, chunks: list[bytes], headers=()):
    """Run the middleware around an app that reads the whole body; record what happened."""
    pulled: list[int] = []
    sent: list[dict] = []
    reached = []

    async def app(scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        reached.append(len(body))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    queue = list(chunks)

    async def receive():
        chunk = queue.pop(0)
        pulled.append(len(chunk))
        return {"type": "http.request", "body": chunk, "more_body": bool(queue)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": path, "headers": list(headers)}
    await BodyLimitMiddleware(app, CAPS)(scope, receive, send)
    return sent[0]["status"], pulled, reached


def test_the_middleware_refuses_a_declared_length_without_reading_any_body():
    status, pulled, reached = asyncio.run(
        _run("/accounts/login/", [b"x"], headers=[(b"content-length", str(2 * MB).encode())])
    )
    assert (status, pulled, reached) == (413, [], [])


def test_the_middleware_stops_a_streamed_body_as_soon_as_it_passes_the_cap():
    chunk = b"x" * (256 * 1024)
    status, pulled, reached = asyncio.run(_run("/accounts/login/", [chunk] * 400))  # 100 MB
    assert status == 413 and reached == []
    assert len(pulled) == 5  # 1.25 MB read of 100 MB: the rest is never pulled


def test_the_middleware_lets_bodies_within_the_cap_through():
    status, _, reached = asyncio.run(_run("/api/v1/x", [b"x" * MB] * 3))
    assert status == 200 and reached == [3 * MB]


# -- Django's own layer (test client, WSGI) ----------------------------------------------------


def test_django_answers_413_by_content_length_per_path(client, settings):
    settings.QUORUM_MAX_FORM_BODY = 1024
    refused = client.post("/accounts/login/", {"login": "x" * 2000, "password": "y"})
    assert refused.status_code == 413
    assert "at most 1024 bytes" in refused.json()["detail"]  # the API's error shape
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE >= settings.QUORUM_MAX_WEBHOOK_BODY


# -- the real server ---------------------------------------------------------------------------


def _free_port() -> int:
    # The system's choice, not a fixed range: tests of this module run on several xdist
    # workers at once, and two servers tried on one port answer for each other.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident memory now (VmRSS) or at its highest so far (VmHWM), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field}")


@pytest.fixture
def daphne_server():
    port = _free_port()
    env = {**os.environ, "SECRET_KEY": os.environ.get("SECRET_KEY") or "x" * 50}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "config.asgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _, _ = _exchange(port, "GET", "/healthz", b"", iter(()))
            except OSError:
                status = 0
            # Any answer while this process lives: the server is up (and it is this one).
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            if status:
                break
            assert time.monotonic() < deadline, "daphne did not start"
            time.sleep(0.2)
        yield port, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _body(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    block = b"x" * size
    sent = 0
    while sent < total:
        piece = block if total - sent >= size else block[: total - sent]
        sent += len(piece)
        yield piece


def _chunked(parts: Iterator[bytes]) -> Iterator[bytes]:
    for part in parts:
        yield b"%x\r\n" % len(part) + part + b"\r\n"
    yield b"0\r\n\r\n"


def _exchange(port: int, method: str, path: str, head: bytes, body: Iterator[bytes]):
    """Send a request, streaming BODY until the server answers; returns (status, sent, reply)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode() + head + b"\r\n")
        sent = 0
        for piece in body:
            if select.select([sock], [], [], 0)[0]:
                break  # the answer is there: stop sending
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
        reply = b""
        while b"\r\n\r\n" not in reply:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0
    return status, sent, reply


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_daphne_refuses_a_200_mb_webhook_without_buffering_it(daphne_server, framing):
    port, pid = daphne_server
    total = 200 * MB
    # Warm up the code paths (and whatever the first requests start, such as the embedded
    # sweeper's thread), so that the measurement sees only the large body.
    for _ in range(3):
        _exchange(port, "POST", "/webhooks/github/", b"Content-Length: 2\r\n", iter([b"{}"]))
        time.sleep(0.5)
    before, peak_before = _rss_kb(pid), _rss_kb(pid, "VmHWM")
    if framing == "content-length":
        head = f"Content-Type: application/json\r\nContent-Length: {total}\r\n".encode()
        status, sent, reply = _exchange(port, "POST", "/webhooks/github/", head, _body(total))
    else:
        head = b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        status, sent, reply = _exchange(
            port, "POST", "/webhooks/github/", head, _chunked(_body(total))
        )
    time.sleep(0.5)
    grown_kb = _rss_kb(pid) - before
    peak_kb = _rss_kb(pid, "VmHWM") - peak_before
    print(f"{framing}: 413 after {sent / MB:.1f} MB; RSS +{grown_kb}kB, peak +{peak_kb}kB")
    assert status == 413, reply[:300]
    assert b"at most 26214400 bytes" in reply
    assert sent < total / 2  # the client was told early and stopped
    assert grown_kb < 10 * 1024
    assert peak_kb < 10 * 1024  # not even for a moment (daphne alone peaked at +205 MB)


def test_daphne_applies_the_smaller_caps_and_lets_small_bodies_through(daphne_server):
    port, _ = daphne_server
    form = 2 * MB
    status, _, _ = _exchange(
        port,
        "POST",
        "/accounts/login/",
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {form}\r\n".encode(),
        _body(form),
    )
    assert status == 413
    status, _, _ = _exchange(
        port,
        "POST",
        "/api/v1/workspaces",
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
        _chunked(_body(11 * MB)),
    )
    assert status == 413
    # Within the cap the request reaches Django (which refuses the unsigned delivery itself).
    status, _, reply = _exchange(
        port, "POST", "/webhooks/github/", b"Content-Length: 2\r\n", iter([b"{}"])
    )
    assert status not in (0, 413), reply[:300]
