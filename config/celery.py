"""Celery app for the full stack; tasks are discovered from the apps' tasks.py modules."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("quorum")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
