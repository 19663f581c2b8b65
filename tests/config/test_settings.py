"""The env-driven settings module refuses bad configuration at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import env

ROOT = Path(__file__).resolve().parents[2]


def _load_settings(**overrides: str) -> subprocess.CompletedProcess:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)",
        ],
        cwd=ROOT,
        env={**keep, "DJANGO_SETTINGS_MODULE": "config.settings", **overrides},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_requires_a_secret_key_when_debug_is_off(tmp_path):
    result = _load_settings(DEBUG="false", QUORUM_VAR_DIR=str(tmp_path))
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off." in result.stderr


def test_it_starts_embedded_with_no_environment(tmp_path):
    result = _load_settings(QUORUM_VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_the_full_stack_defaults_to_debug_off(tmp_path):
    result = _load_settings(DATABASE_URL="postgres://u@127.0.0.1/x", QUORUM_VAR_DIR=str(tmp_path))
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize("raw", ["maybe", "2", "enabled"])
def test_envbool_raises_on_values_it_does_not_know(monkeypatch, raw):
    monkeypatch.setenv("SOME_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="SOME_FLAG"):
        env.envbool("SOME_FLAG", default=False)


def test_envsecret_reads_the_file_variant(monkeypatch, tmp_path):
    secret_file = tmp_path / "key"
    secret_file.write_text("s3cret\n")
    monkeypatch.setenv("API_KEY_FILE", str(secret_file))
    assert env.envsecret("API_KEY") == "s3cret"
    monkeypatch.setenv("API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="cannot be read"):
        env.envsecret("API_KEY")


def test_envint_and_envchoice_validate(monkeypatch):
    monkeypatch.setenv("N", "abc")
    with pytest.raises(ImproperlyConfigured):
        env.envint("N", 1)
    monkeypatch.setenv("N", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env.envint("N", 1, minimum=1)
    monkeypatch.setenv("PROVIDER", "openia")
    with pytest.raises(ImproperlyConfigured, match="must be one of"):
        env.envchoice("PROVIDER", "", {"", "openai", "anthropic"})
