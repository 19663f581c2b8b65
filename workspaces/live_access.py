"""Open sockets follow permissions: a socket's right to receive is re-checked, not remembered.

Every socket joins its user's group. Removing a member, changing a role or logging out sends
`access.changed` to that group after commit, and each socket re-checks membership and session
at once and closes if either is gone (a role change closes too: the page reconnects and renders
for the new role). Independently, every event is checked before it is sent, with the answer
reused for at most a second, so a missed signal cannot leak more than that. Forms a socket
renders get the browser's own CSRF token (`csrf_context`), shared by every app's sockets.

The database work of the live pages (these checks, the review page's renders) runs in a pool of
its own (`off_thread`), not on the one thread Channels gives every consumer of a process for the
ORM: a burst of renders never holds up a handshake, and a handshake never waits behind them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, sync_to_async
from cachetools import TTLCache
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.db import close_old_connections, transaction

from workspaces.models import Membership

log = logging.getLogger(__name__)

RECHECK_SECONDS = 1.0
CLOSE_REVOKED = 4403
# Answers of the last second per (workspace, user, role, session), shared by the sockets of this
# process; reached only from the event loop's thread.
_recent_checks: TTLCache[tuple[Any, ...], bool] = TTLCache(maxsize=4096, ttl=RECHECK_SECONDS)
_checks_under_way: dict[tuple[Any, ...], asyncio.Future[bool]] = {}


# Threads for the live pages' database work in one process. Renders (~50 ms of CPU each) get
# two: more only queue on the interpreter lock and take connections the process's requests
# need from its pool. Access checks (a handshake, a re-check before a send, who a render is
# for) get their own, so a burst of renders never holds up a handshake; and what a page must
# show at once (a round's verdict) its own, never queued behind the other pages' updates.
# Each thread holds at most one database connection while it works (closed or handed back
# after each call, as after a request).
RENDER_THREADS = 2
CHECK_THREADS = 2
URGENT_THREADS = 1


class _Pool(ThreadPoolExecutor):
    """A thread pool set up anew in a forked child (the browser tests fork the live server):
    the parent's threads do not survive a fork, and a pool that believes it has them never runs
    what it is given."""

    def __init__(self, threads: int, name: str) -> None:
        super().__init__(max_workers=threads, thread_name_prefix=name)
        os.register_at_fork(
            after_in_child=lambda: ThreadPoolExecutor.__init__(
                self, max_workers=threads, thread_name_prefix=name
            )
        )


_render_pool = _Pool(RENDER_THREADS, "live-render")
_check_pool = _Pool(CHECK_THREADS, "live-check")
_urgent_pool = _Pool(URGENT_THREADS, "live-urgent")


def _in_pool[**P, R](
    pool: ThreadPoolExecutor, function: Callable[P, R]
) -> Callable[P, Coroutine[Any, Any, R]]:
    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(call, thread_sensitive=False, executor=pool)


def off_thread[**P, R](function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Run an access check in the live check pool, with the database connection handling of a
    request (`close_old_connections` before and after), instead of on the consumers' one ORM
    thread."""
    return _in_pool(_check_pool, function)


def render_off_thread[**P, R](function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """The same for a live page's render, in the render pool."""
    return _in_pool(_render_pool, function)


def urgent_off_thread[**P, R](function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """The same for a render a page must get at once, in the urgent pool."""
    return _in_pool(_urgent_pool, function)


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def access_changed(user_id: int, *, ended_session: str = "") -> None:
    """Tell every open socket of this user to re-check its access once the change commits.
    `ended_session` names a session being logged out: Django sends the logout signal before it
    deletes the session, so its sockets close on the name rather than on a re-check."""
    message = {"type": "access.changed", "ended_session": ended_session}

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(user_group(user_id), message)
        except Exception:  # the per-event check still closes the socket within a second
            log.exception("could not signal an access change for user %s", user_id)

    transaction.on_commit(send)


def close_sockets_on_logout(sender, request, user, **kwargs) -> None:
    if user is not None:
        session = getattr(request, "session", None)
        access_changed(user.pk, ended_session=getattr(session, "session_key", "") or "")


def _session_valid(session, user) -> bool:
    """The socket's login session still exists and still names this user with this password."""
    if session is None or not session.session_key:
        return False
    store = session.__class__(session.session_key)
    data = store.load()
    if str(data.get(SESSION_KEY)) != str(user.pk) or BACKEND_SESSION_KEY not in data:
        return False
    stored_hash = data.get(HASH_SESSION_KEY)
    return stored_hash is None or stored_hash == user.get_session_auth_hash()


if TYPE_CHECKING:
    from channels.generic.websocket import AsyncWebsocketConsumer as _ConsumerBase
else:
    _ConsumerBase = object


class LiveAccessMixin(_ConsumerBase):
    """For AsyncWebsocketConsumer subclasses holding `self.membership` once connected."""

    membership: Membership
    _checked_at: float = 0.0
    _allowed: bool = True

    async def join_user_group(self) -> None:
        await self.channel_layer.group_add(user_group(self.membership.user_id), self.channel_name)

    async def leave_user_group(self) -> None:
        if getattr(self, "membership", None) is not None:
            await self.channel_layer.group_discard(
                user_group(self.membership.user_id), self.channel_name
            )

    @off_thread
    def _still_allowed(self) -> bool:
        m = self.membership
        role = (
            Membership.objects.filter(workspace_id=m.workspace_id, user_id=m.user_id)
            .values_list("role", flat=True)
            .first()
        )
        if role != m.role:
            return False
        return _session_valid(self.scope.get("session"), m.user)

    async def may_send(self, *, fresh: bool = False) -> bool:
        """Whether this socket may still receive; closes it when not."""
        if not self._allowed:
            return False
        now = time.monotonic()
        if fresh or now - self._checked_at >= RECHECK_SECONDS:
            self._allowed = await self._shared_check(fresh=fresh)
            self._checked_at = now
            if not self._allowed:
                await self.close(code=CLOSE_REVOKED)
        return self._allowed

    async def _shared_check(self, *, fresh: bool) -> bool:
        """The sockets of one login session on one workspace (a person's tabs, or 200 pages
        behind one proxy) ask the same question: within a second, one answer serves them all,
        and a check under way is awaited rather than repeated. A signalled change (`fresh`)
        is always checked anew."""
        m = self.membership
        session = self.scope.get("session")
        key = (m.workspace_id, m.user_id, m.role, getattr(session, "session_key", None))
        if not fresh:
            if (answer := _recent_checks.get(key)) is not None:
                return answer
            if (pending := _checks_under_way.get(key)) is not None:
                return await pending
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: None if f.cancelled() else f.exception())
        _checks_under_way[key] = future
        try:
            allowed = await self._still_allowed()
            _recent_checks[key] = allowed
            future.set_result(allowed)
        except BaseException as error:
            future.set_exception(error)
            raise
        finally:
            if _checks_under_way.get(key) is future:
                del _checks_under_way[key]
        return allowed

    async def access_changed(self, event: dict) -> None:
        session = self.scope.get("session")
        ended = event.get("ended_session")
        if ended and session is not None and session.session_key == ended:
            self._allowed = False
            await self.close(code=CLOSE_REVOKED)
            return
        await self.may_send(fresh=True)


def csrf_context(scope: Mapping[str, Any]) -> dict[str, str]:
    """Forms rendered for a socket have no request: give {% csrf_token %} the browser's own CSRF
    cookie (an unmasked secret, which Django accepts), so they can still be posted."""
    token = scope.get("cookies", {}).get(settings.CSRF_COOKIE_NAME, "")
    return {"csrf_token": token} if token else {}
