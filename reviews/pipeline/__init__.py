"""The pr_review pipeline: a declarative template, durable stages, Celery tasks."""
