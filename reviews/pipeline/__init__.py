"""The pr_review pipeline: a declarative template, durable stages, Celery tasks (DESIGN.md §2)."""
