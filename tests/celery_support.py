"""A real Celery worker process for tests: it reaches the test database, Redis and the fake
model server over loopback, as a deployment's workers would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
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


class Workers:
    """Celery worker processes against the test database; all are killed by `close`.

    `supervised=True` restarts a worker that exits, as the production stack's restart policy
    does (docker/compose.yaml `restart: unless-stopped`); `restarts` counts them.
    """

    def __init__(self, queue: str, tmp_path: Path, fake_model) -> None:
        self.queue, self.tmp_path, self.fake_model = queue, tmp_path, fake_model
        self.started: list[subprocess.Popen] = []
        self.watched: list[tuple[int, dict[str, str]]] = []  # (index in started, its env)
        self.restarts = 0
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None

    def __call__(self, supervised: bool = False, **extra_env: str) -> subprocess.Popen:
        index = len(self.started)
        process = self._spawn(str(index), extra_env)
        self.started.append(process)
        log_path = self.tmp_path / f"worker-{index}.log"
        deadline = time.monotonic() + 60
        while "ready." not in log_path.read_text():
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "worker did not start"
            time.sleep(0.2)
        if supervised:
            self.watched.append((index, extra_env))
            if self._supervisor is None:
                self._supervisor = threading.Thread(target=self._supervise, daemon=True)
                self._supervisor.start()
        return process

    def _spawn(self, name: str, extra_env: dict[str, str]) -> subprocess.Popen:
        db = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": (
                f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
                f"/{db['NAME']}"
            ),
            "REDIS_URL": django_settings.REDIS_URL,
            "SECRET_KEY": "worker-test",
            "QUORUM_CELERY_QUEUE": self.queue,
            "QUORUM_WORKTREE_ROOT": str(self.tmp_path / "worktrees"),
            "QUORUM_LOCAL_REPO_ROOTS": str(self.tmp_path),
            **scenario.model_env(self.fake_model),
            "QUORUM_WORKER_THREADS": "4",
            **extra_env,
        }
        # The production command (docker/compose.yaml): threads from the settings.
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", self.queue),
                *("--loglevel", "INFO", "--without-gossip"),
                *("--without-mingle", "--hostname", f"w{name}-{self.queue}@%h"),
            ],
            cwd=ROOT,
            env=env,
            stdout=(self.tmp_path / f"worker-{name}.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _supervise(self) -> None:
        while not self._stopping.wait(0.5):
            for index, extra_env in self.watched:
                if self.started[index].poll() is not None:
                    self.restarts += 1
                    self.started[index] = self._spawn(f"{index}-restart{self.restarts}", extra_env)

    def close(self) -> None:
        self._stopping.set()
        if self._supervisor is not None:
            self._supervisor.join()
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def worker_factory(queue, tmp_path, fake_model):
    """Start Celery worker processes (see Workers); all are killed at the end."""
    workers = Workers(queue, tmp_path, fake_model)
    yield workers
    workers.close()


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
