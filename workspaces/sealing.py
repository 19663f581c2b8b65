"""Sealing the model keys admins enter for a reviewer: encrypted (Fernet: AES-CBC with an
HMAC) with a key that lives outside the database, so a database dump or a backup does not
carry usable keys. The sealing key is QUORUM_SECRETS_KEY (or its _FILE), else derived from
SECRET_KEY; either way it is never stored with the data it protects."""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


class UnsealError(Exception):
    """A sealed key that this server's sealing key cannot open (rotated or altered)."""


def _fernet() -> Fernet:
    secret = (settings.QUORUM_SECRETS_KEY or settings.SECRET_KEY).encode()
    # A key of its own, not SECRET_KEY itself: sessions and signing keep theirs.
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"quorum reviewer model keys"
    ).derive(secret)
    return Fernet(base64.urlsafe_b64encode(derived))


def seal(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def unseal(sealed: str) -> str:
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken as exc:
        raise UnsealError(
            "the reviewer's stored key cannot be read with this server's sealing key "
            "(QUORUM_SECRETS_KEY or SECRET_KEY changed): an admin enters it again"
        ) from exc
