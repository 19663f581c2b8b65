"""docker/compose.yaml is the documented production stack: `check --deploy --fail-level WARNING`
passes with exactly the environment it gives the web process (its defaults, its secret files),
the web port is published on loopback only, and no password has a default: each secret is a
file compose refuses to start without."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"
# What an operator must set (the `${VAR:?…}` variables), as the documented example does.
REQUIRED = {"ALLOWED_HOSTS": "quorum.example.com"}
_VAR = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def _interpolate(value: str, environ: dict[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}`."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2) or "", match.group(3) or ""
        given = environ.get(name, "")
        if op.endswith("?") and not given:
            raise AssertionError(f"{name} is required: {arg}")
        if op.endswith("-") and not given:
            return arg
        return given

    return _VAR.sub(one, value)


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _service_env(compose: dict, service: str, environ: dict[str, str]) -> dict[str, str]:
    env = compose["services"][service]["environment"]
    return {k: _interpolate(str(v), environ) for k, v in env.items()}


def test_check_deploy_passes_with_exactly_composes_environment(tmp_path):
    compose = _compose()
    env = _service_env(compose, "web", REQUIRED)
    # The secret files compose mounts under /run/secrets, made here with random values.
    mounted = {}
    for name in compose["services"]["web"]["secrets"]:
        path = tmp_path / name
        path.write_text(secrets.token_urlsafe(48) + "\n")
        mounted[f"/run/secrets/{name}"] = str(path)
    for key, value in env.items():
        if key.endswith("_FILE"):
            assert value in mounted, f"{key} names {value}, which web does not mount"
            env[key] = mounted[value]
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**keep, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert env["SECURE_SSL_REDIRECT"] == "true" and env["SECURE_HSTS_SECONDS"] != "0"


def test_the_web_port_is_published_on_loopback_only():
    compose = _compose()
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            published = _interpolate(str(port), {})
            assert published.startswith("127.0.0.1:"), (name, published)


def test_no_password_or_key_has_a_default_and_every_secret_is_a_required_file():
    text = COMPOSE.read_text()
    for match in _VAR.finditer(text):
        name, op, default = match.group(1), match.group(2) or "", match.group(3) or ""
        if op.endswith("-") and re.search(r"PASSWORD|SECRET_KEY|AUDIT_KEY", name):
            raise AssertionError(f"{name} falls back to {default!r}")
    compose = _compose()
    for name, service in compose["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET_KEY$|AUDIT_KEY$|SECRETS_KEY$", key):
                assert key.endswith("_FILE"), (name, key)
                mounted = f"/run/secrets/{str(value).rsplit('/', 1)[-1]}"
                assert value == mounted and value.rsplit("/", 1)[-1] in service["secrets"], (
                    name,
                    key,
                )
    assert all("file" in s for s in compose["secrets"].values())
