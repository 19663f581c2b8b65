"""A real Celery worker process for tests: it reaches the test database, Redis and the fake
model server over loopback, as a deployment's workers would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from config.celery import app as celery_app
from reviews.sources.sample_repo import create_sample_repository
from tests.reviews import pipeline_scenarios as scenario
from workspaces.models import Repository

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def queue():
    name = f"quorum-test-{uuid.uuid4().hex[:8]}"
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = name
    yield name
    celery_app.conf.task_default_queue = previous


@pytest.fixture
def worker_factory(queue, tmp_path, fake_model):
    """Start Celery worker processes against the test database; all are killed at the end."""
    started: list[subprocess.Popen] = []
    db = connection.settings_dict
    database_url = (
        f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )

    def start(**extra_env: str) -> subprocess.Popen:
        log_path = tmp_path / f"worker-{len(started)}.log"
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": django_settings.REDIS_URL,
            "SECRET_KEY": "worker-test",
            "QUORUM_CELERY_QUEUE": queue,
            "QUORUM_WORKTREE_ROOT": str(tmp_path / "worktrees"),
            "QUORUM_LOCAL_REPO_ROOTS": str(tmp_path),
            **scenario.model_env(fake_model),
            **extra_env,
        }
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                queue,
                "--concurrency",
                "4",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"w{len(started)}-{queue}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log_path.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(process)
        deadline = time.monotonic() + 60
        while "ready." not in log_path.read_text():
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "worker did not start"
            time.sleep(0.2)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def shop(settings, tmp_path, workspace, alice, fake_model):
    settings.QUORUM_LOCAL_REPO_ROOTS = [tmp_path]
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    scenario.model_settings(settings, fake_model)
    base, head = create_sample_repository(tmp_path / "shop")
    repo = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str((tmp_path / "shop").resolve())
    )
    return repo, base, head, alice
