"""Where the audit chain's key comes from: the environment or a file, never the database."""

from __future__ import annotations

import logging

from django.conf import settings

from guardrails.chain import key_from_secret_key

log = logging.getLogger(__name__)


def audit_key() -> bytes:
    configured = getattr(settings, "QUORUM_AUDIT_KEY", "")
    if configured:
        return configured.encode()
    return key_from_secret_key(settings.SECRET_KEY)


def audit_key_is_derived() -> bool:
    return not getattr(settings, "QUORUM_AUDIT_KEY", "")


def warn_if_derived() -> None:
    """A server without its own audit key works, but says so once per process."""
    if audit_key_is_derived() and not settings.DEBUG:
        log.warning(
            "QUORUM_AUDIT_KEY is not set: the audit chain key is derived from SECRET_KEY. "
            "Rotating SECRET_KEY would leave the existing audit entries unverifiable; set "
            "QUORUM_AUDIT_KEY (or QUORUM_AUDIT_KEY_FILE) to a random value of 32+ characters."
        )
