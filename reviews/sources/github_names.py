"""Checks on what goes into a GitHub API path: an owner or repository name, a commit SHA, a pull
request number. Each raises ValueError on anything else, so no caller's value can change which
resource a request reaches. Shared by the client (github_client) and its authentication
(github_auth).
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def path_name(value: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"not a GitHub owner or repository name: {value!r}")
    return value


def path_sha(value: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{7,40}", value):
        raise ValueError(f"not a commit SHA: {value!r}")
    return value


def path_number(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"not a pull request number: {value!r}")
    return value
