"""Rows written together in one UPDATE, each with a value of its own: the one place that builds
the `Case`/`When` on the primary key that such a statement sets a column to. Used by the
reviewer streams' attempts (services/streams.py) and the outcomes of pipeline steps run
together (pipeline/step_writes.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Case, Field, Value, When


def value_per_row(values: Mapping[int, Any], field: Field) -> Case:
    """A column's value for each row of an UPDATE, keyed by primary key: `values[pk]` for row
    `pk`, typed as `field`."""
    return Case(
        *(When(pk=pk, then=Value(value, output_field=field)) for pk, value in values.items()),
        output_field=field,
    )
