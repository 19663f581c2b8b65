"""A space's live events gathered over a short window and sent as one message (full stack).

A round moves its space in bursts: five reviewers start within a second, a reviewer records
several findings at once, the finaliser writes its axes one after the other. Sent one by one,
each is a version, a Redis script, a group message and a wake-up of every open page; a page
renders for seconds when the cores are busy, so it fell dozens of versions behind and most of
what it was sent was stale before it rendered.

Every process of the stack (web, workers) appends the space's events to one Redis list. The
first to append while no send is planned becomes the space's sender: `QUORUM_LIVE_WINDOW_MS`
later it takes the whole list and all the events since go out as one message and one version
(reviews.live.events.send_events). Taking the list and ending the window are one atomic step,
so an event appended afterwards opens a new window; none waits in the list without a sender.
If the sender's process dies during its window, its claim lapses after `CLAIM_SECONDS` and the
next event of the space sends what was left with its own.

Without Redis (the embedded default: one process), with a window of 0, or when Redis does not
answer, each committed transaction's events are sent at once, as before.
"""

from __future__ import annotations

import atexit
import heapq
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

Events = list[dict[str, Any]]
Send = Callable[[int, Events], None]

# Events that end their space's window as soon as they are committed.
AT_ONCE = frozenset({"review.verdict"})
# How long a sender's claim on a space holds if its process never sends (killed mid-window).
CLAIM_SECONDS = 5

# KEYS[1]: the space's event list; KEYS[2]: its sender's claim. The events, and the window ends.
_TAKE = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1], KEYS[2])
return items
"""


def _keys(space_id: int) -> tuple[str, str]:
    return f"quorum:live:window:{space_id}", f"quorum:live:sender:{space_id}"


class _Timer:
    """Calls due in this process, on one daemon thread started with the first."""

    def __init__(self) -> None:
        self.order = itertools.count()
        self._reset()
        # A forked child has neither the thread nor, safely, the lock it may have held.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.due: list[tuple[float, int, Callable[[], None]]] = []
        self.wake = threading.Condition()
        self.started = False

    def call_later(self, seconds: float, function: Callable[[], None]) -> None:
        with self.wake:
            if not self.started:
                self.started = True
                threading.Thread(target=self._run, name="live-window", daemon=True).start()
            heapq.heappush(self.due, (time.monotonic() + seconds, next(self.order), function))
            self.wake.notify()

    def _run(self) -> None:
        while True:
            with self.wake:
                while not self.due or self.due[0][0] > time.monotonic():
                    self.wake.wait(self.due[0][0] - time.monotonic() if self.due else None)
                _, _, function = heapq.heappop(self.due)
            try:
                function()
            except Exception:  # one space's failed send must not stop the others'
                log.exception("a live update could not be sent")

    def run_now(self) -> None:
        """At exit: what is planned goes out rather than waiting for the next event."""
        with self.wake:
            planned, self.due = self.due, []
        for _, _, function in sorted(planned):
            try:
                function()
            except Exception:
                log.exception("a live update could not be sent at exit")


_timer = _Timer()
atexit.register(_timer.run_now)


class _Window:
    def __init__(self, url: str, seconds: float) -> None:
        import redis

        self.client: Any = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)
        self.take_script = self.client.register_script(_TAKE)
        self.seconds = seconds

    def add(self, space_id: int, events: Events, send: Send, *, at_once: bool) -> None:
        events_key, sender_key = _keys(space_id)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(events_key, json.dumps(events))
            pipe.expire(events_key, 3600)
            pipe.set(sender_key, os.getpid(), nx=True, ex=CLAIM_SECONDS)
            claimed = pipe.execute()[-1]
        if at_once:
            self.send(space_id, send)
        elif claimed:
            _timer.call_later(self.seconds, lambda: self.send(space_id, send))

    def send(self, space_id: int, send: Send) -> None:
        raw = self.take_script(keys=list(_keys(space_id)))
        events = [event for item in raw for event in json.loads(item)]
        if events:
            send(space_id, events)


@cache
def _window(url: str, milliseconds: int) -> _Window | None:
    return _Window(url, milliseconds / 1000) if url and milliseconds else None


def add(space_id: int, events: Events, send: Send) -> None:
    """Send the space's `events` (committed) with the others of its window, or now when there
    is no window. A verdict ends the window at once: it is what the people on the page wait
    for, and it goes out with whatever the window held."""
    window = _window(settings.REDIS_URL or "", settings.QUORUM_LIVE_WINDOW_MS)
    if window is None:
        send(space_id, events)
        return
    try:
        window.add(space_id, events, send, at_once=any(e["type"] in AT_ONCE for e in events))
    except Exception:  # Redis does not answer: the page still updates, one message per change
        log.warning("live window unavailable for space %s, sending at once", space_id)
        send(space_id, events)
