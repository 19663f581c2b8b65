"""JSON columns with a schema: `SchemaJSONField(schema=…)`.

A JSONField accepts whatever Python hands it; a typo in a key or a list where a dict belongs is
stored and found, much later, by a reader. A SchemaJSONField runs a pydantic schema (a model, or
any type a `TypeAdapter` takes, such as `list[Criterion]`) every time a value is written: by
`save()`, `create()`, `bulk_create()`, `update()` and `bulk_update()` alike. What is stored is
the validated value dumped as JSON (aliases used, unset defaults left out, so a value written
key by key keeps only the keys that were written). Invalid data raises
`django.core.exceptions.ValidationError` naming the field and pydantic's messages: it is never
stored. Model forms and `full_clean()` run the same check.

Reads, per field (`reads=`):

- `"model"`: the value is the validated schema object (a `RoundStats`, a `NodeTags`, …) in
  memory, whether it came from the database or was assigned as a dict. For records the code
  reads field by field and templates show: attributes instead of keys spelt as strings, and a
  misspelt attribute fails at once rather than reading as missing.
- `"json"` (the default): the value is plain JSON (dicts, lists). For values the code passes on
  whole — to a prompt, an export, an API response, a hash — or that a rule function normalises
  before it is assigned. The shape is still checked on every write.

A rule of thumb when adding a field: "model" if readers look inside the value, "json" if they
forward it.

Migrations see an ordinary JSONField (`deconstruct` says so): the schema is code, not database
state, so changing it needs no migration, and historical models in data migrations read and
write raw JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from django.core import exceptions
from django.db import models
from django.db.models.query_utils import DeferredAttribute
from pydantic import BaseModel, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from config.application_errors import ErrorCode

Reads = Literal["model", "json"]


class _SchemaAttribute(DeferredAttribute):
    """Keeps a `reads="model"` field's value a schema object whatever is assigned to it."""

    field: SchemaJSONField

    def __set__(self, instance: models.Model, value: Any) -> None:
        instance.__dict__[self.field.attname] = self.field.to_schema(value)


class SchemaJSONField(models.JSONField):
    def __init__(self, *args: Any, schema: Any = None, reads: Reads = "json", **kwargs: Any):
        if reads not in ("model", "json"):
            raise ValueError(f"reads must be 'model' or 'json', not {reads!r}")
        self.schema = schema
        self.reads = reads
        self.adapter: TypeAdapter[Any] | None = None if schema is None else TypeAdapter(schema)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs

    def contribute_to_class(
        self, cls: type[models.Model], name: str, private_only: bool = False
    ) -> None:
        super().contribute_to_class(cls, name, private_only=private_only)
        if self.reads == "model" and self.adapter is not None:
            setattr(cls, self.attname, _SchemaAttribute(self))

    # -- validation ------------------------------------------------------------------------

    def _invalid(self, exc: PydanticValidationError) -> exceptions.ValidationError:
        where = f"{self.model.__name__}.{self.name}" if hasattr(self, "model") else self.name
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
        )
        return exceptions.ValidationError(
            f"{where} does not match its schema: {problems}", code=ErrorCode.SCHEMA
        )

    def _invalid_type(self, value: BaseModel) -> exceptions.ValidationError:
        return exceptions.ValidationError(
            f"{self.name} holds {self.schema.__name__}, not {type(value).__name__}",
            code=ErrorCode.SCHEMA,
        )

    def validated(self, value: Any, *, stored: bool = False) -> Any:
        """The value as the schema's object (a model, a list of models, …). A model object is
        checked again: attribute assignments on it were not. `stored`: a value read from the
        database, where a key a later version retired is ignored (and gone on the next
        write) rather than making the row unreadable."""
        assert self.adapter is not None
        if isinstance(value, BaseModel) and isinstance(self.schema, type):
            if not isinstance(value, self.schema):
                raise self._invalid_type(value)
            value = value.model_dump(by_alias=True, exclude_unset=True, warnings=False)
        try:
            return self.adapter.validate_python(value, extra="ignore" if stored else None)
        except PydanticValidationError as exc:
            raise self._invalid(exc) from exc

    def to_json(self, value: Any) -> Any:
        """What is stored: the validated value as JSON."""
        if self.adapter is None or value is None or hasattr(value, "resolve_expression"):
            return value
        return self.adapter.dump_python(
            self.validated(value), mode="json", by_alias=True, exclude_unset=True
        )

    def to_schema(self, value: Any, *, stored: bool = False) -> Any:
        if self.adapter is None or value is None or hasattr(value, "resolve_expression"):
            return value
        if isinstance(self.schema, type) and isinstance(value, self.schema):
            return value
        return self.validated(value, stored=stored)

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        return super().get_db_prep_save(self.to_json(value), connection)

    def validate(self, value: Any, model_instance: models.Model | None) -> None:
        value = self.to_json(value)
        super().validate(value, model_instance)

    # -- reading ---------------------------------------------------------------------------

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        # A whole column, not a key inside it (`tags__panel` reads a bare string).
        if self.reads == "model" and getattr(expression, "target", None) is self:
            return self.to_schema(value, stored=True)
        return value

    def value_from_object(self, obj: models.Model) -> Any:
        # Serializers (dumpdata) and model forms get JSON, not schema objects.
        return self.to_json(super().value_from_object(obj))
