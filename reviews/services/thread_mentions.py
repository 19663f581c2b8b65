"""Telling the members a thread message mentions (`@name`) that they were mentioned.

An e-mail to each mentioned member of the space's workspace (the author excepted), sent by a
background task after the message commits; a message's mentions are told once, whatever the
task's retries: the message is claimed before anything is sent, and given back when the mail
server fails so the retry sends it.
"""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.urls import reverse
from django.utils import timezone

from reviews.domain import threads as rules
from reviews.models import ThreadMessage
from workspaces.models import Membership


def mentioned_addresses(message: ThreadMessage) -> list[str]:
    """The addresses of the active members the message mentions, its author excepted."""
    handles = set(rules.mentions(message.body))
    if not handles:
        return []
    rows = Membership.objects.filter(
        workspace_id=message.space.workspace_id, user__is_active=True
    ).values_list("user_id", "user__username", "user__email")
    return sorted(
        {
            email
            for user_id, username, email in rows
            if email
            and user_id != message.author_id
            and handles & set(rules.member_handles(username=username, email=email))
        }
    )


def mentions_tell(message_id: int) -> int:
    """Send the mention e-mails of one message; returns how many went out (0 when told before)."""
    claimed = ThreadMessage.objects.filter(pk=message_id, mentions_told_at__isnull=True).update(
        mentions_told_at=timezone.now()
    )
    if not claimed:
        return 0
    message = ThreadMessage.objects.select_related("space__pull_request", "space__workspace").get(
        pk=message_id
    )
    addresses = mentioned_addresses(message)
    if not addresses:
        return 0
    space = message.space
    link = (settings.QUORUM_PUBLIC_URL or "http://localhost:8000") + reverse(
        "reviews:detail", args=[space.workspace.slug, space.pk]
    )
    title = space.pull_request.title or f"review {space.pk}"
    body = (
        f"{message.author_label} mentioned you in the discussion of {message.subject} on "
        f"\u201c{title}\u201d:\n\n{message.body}\n\nOpen the review: {link}\n"
    )
    try:
        with get_connection() as connection:
            EmailMessage(
                subject=f"[Quorum] {message.author_label} mentioned you on {title}"[:200],
                body=body,
                bcc=addresses,  # one mail: members do not see each other's addresses
                connection=connection,
            ).send()
    except Exception:
        ThreadMessage.objects.filter(pk=message_id).update(mentions_told_at=None)
        raise
    return len(addresses)
