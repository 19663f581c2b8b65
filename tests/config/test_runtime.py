"""Background work, the channel layer and static files in each runtime mode."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from config import background


class _RecordingTask:
    name = "tests.recording"

    def __init__(self):
        self.thread = None
        self.done = threading.Event()

    def run(self, *args, **kwargs):
        self.thread = threading.current_thread()
        self.args = args
        self.done.set()


@pytest.mark.skipif(
    bool(settings.REDIS_URL), reason="embedded mode only: with Redis, Celery runs it"
)
def test_embedded_background_work_runs_outside_the_caller_thread():
    task = _RecordingTask()
    future = background.submit_now(task, 7)
    future.result(timeout=10)
    assert task.done.is_set()
    assert task.thread is not threading.current_thread()
    assert task.args == (7,)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(bool(settings.REDIS_URL), reason="embedded mode only")
def test_enqueue_waits_for_the_commit():
    from django.db import transaction

    task = _RecordingTask()
    with transaction.atomic():
        background.enqueue(task, 1)
        assert not task.done.wait(0.2)
    assert task.done.wait(10)


@pytest.mark.redis
def test_the_redis_channel_layer_delivers_group_messages():
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    layer = get_channel_layer()

    async def roundtrip():
        channel = await layer.new_channel()
        await layer.group_add("quorum-test", channel)
        await layer.group_send("quorum-test", {"type": "test.message", "n": 1})
        message = await layer.receive(channel)
        await layer.group_discard("quorum-test", channel)
        return message

    assert async_to_sync(roundtrip)() == {"type": "test.message", "n": 1}


def test_static_files_are_served_by_the_application(client):
    response = client.get("/static/vendor/htmx/htmx.min.js")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"htmx" in body[:2000]


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}
