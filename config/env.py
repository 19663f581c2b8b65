"""Strict environment helpers: a typo in a deployment's environment fails loudly at start-up."""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envsecret(name: str, default: str = "") -> str:
    """Read NAME, or the contents of the file named by NAME_FILE (Docker/K8s secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def envlist(name: str, default: list[str] | None = None, *, sep: str = ",") -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(sep) if item.strip()]


def envchoice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        allowed = ", ".join(sorted(choices))
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {allowed}")
    return value


def envproxyheader(name: str) -> tuple[str, str] | None:
    """NAME as Django's SECURE_PROXY_SSL_HEADER: the header a TLS proxy sets on https requests.

    "HTTP_X_FORWARDED_PROTO" or "X-Forwarded-Proto" mean that header with the value "https";
    "X-Forwarded-Ssl=on" names the value too. Unset or empty: no proxy header is trusted.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    header, sep, value = raw.partition("=")
    header = header.strip().upper().replace("-", "_")
    if not header.startswith("HTTP_"):
        header = f"HTTP_{header}"
    value = value.strip() if sep else "https"
    if not re.fullmatch(r"HTTP_[A-Z0-9_]+", header) or not value:
        raise ImproperlyConfigured(
            f"{name}={raw!r} must name a request header, e.g. HTTP_X_FORWARDED_PROTO "
            "(its value must then be https) or X-Forwarded-Ssl=on"
        )
    return header, value
