"""Shared model configuration and the rule collector every kind validates with.

Every API model is a frozen pydantic model with snake_case attributes and
camelCase aliases, so Python code reads ``cq.spec.cohort_name`` while
manifests say ``cohortName``. Sequences are tuples: the core shares parsed
specs between cycles without copying, so they must not change under it.

Three levels of strictness:

- :class:`ApiModel` forbids unknown keys: everything a user writes in a
  ``spec`` is checked, so ``cohortname:`` is an error naming the field
  instead of a silently ignored line.
- :class:`OpenModel` keeps unknown keys (pod templates: we type the fields we
  read and carry the rest through untouched).
- :class:`StatusModel` drops unknown keys: status is written by controllers,
  and a status exported from a newer Kueue must still load.

Rules that need more than one field (Kueue's webhooks and CEL rules) run in
``model_validator(mode="after")`` hooks. They collect every violation with a
path relative to the model into :class:`Rules` and raise them together as one
pydantic error of type ``kuota_rules``; :mod:`quota.api.registry` expands it
back into one problem per path.
"""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

#: Group and version of every kuota kind.
GROUP: Final = "kuota.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

#: Map keys that read well after a dot; others (``nvidia.com/gpu``) are shown as ``[key]``.
_PLAIN_KEY: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
#: pydantic error type carrying a list of ``(relative path, message)`` pairs.
RULES_ERROR: Final = "kuota_rules"

_COMMON: Final = ConfigDict(
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    serialize_by_alias=True,
    frozen=True,
    use_attribute_docstrings=False,
    # Build each model's validator when it is first used, not at import: a CLI command
    # touches one or two kinds, and building all of them costs a tenth of a second.
    defer_build=True,
)


class ApiModel(BaseModel):
    """Base of user-written API structures: unknown keys are errors."""

    model_config = ConfigDict(**_COMMON, extra="forbid")

    @model_serializer(mode="wrap")
    def _drop_empty_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        # An empty list, map or string that is also the field's default says nothing: leave it
        # out, so written manifests stay as short as the ones users write. Empty values whose
        # default differs (``namespaceSelector: {}`` means "all namespaces") are kept.
        data = handler(self)
        if isinstance(data, dict):
            for name, field in type(self).model_fields.items():
                key = field.alias or name
                if key in data and _is_empty_default(data[key], field):
                    del data[key]
        return data

    def to_dict(self) -> dict[str, Any]:
        """The manifest form: camelCase keys, no ``null`` values, JSON types."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class OpenModel(ApiModel):
    """Base of structures we only partly type (pod templates): unknown keys are kept."""

    model_config = ConfigDict(**_COMMON, extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _drop_null_extras(cls, data: Any) -> Any:
        # A null field means "unset" in a manifest; keeping an unknown one as None would
        # make the object differ from its own manifest form, which leaves nulls out.
        if isinstance(data, dict) and None in data.values():
            known = {f.alias or name for name, f in cls.model_fields.items()} | set(
                cls.model_fields)
            return {k: v for k, v in data.items() if v is not None or k in known}
        return data


class StatusModel(ApiModel):
    """Base of controller-written status: unknown keys are dropped."""

    model_config = ConfigDict(**_COMMON, extra="ignore")


def _is_empty_default(value: Any, field: FieldInfo) -> bool:
    if value in ({}, [], ()):
        return field.default == () or field.default_factory in (dict, list)
    return bool(value == "" and field.default == "")


def join_path(base: str, child: str | int) -> str:
    """``join_path("spec", "resourceGroups")`` -> ``spec.resourceGroups``; ints become ``[i]``."""
    if isinstance(child, int):
        return f"{base}[{child}]"
    if not base:
        return child
    if not child:
        return base
    return f"{base}.{child}" if _PLAIN_KEY.match(child) else f"{base}[{child}]"


class Rules:
    """Collects rule violations as ``(path, message)``; raises them all at once."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def check(self, condition: bool, path: str, message: str) -> None:
        """Record ``message`` at ``path`` unless ``condition`` holds."""
        if not condition:
            self.add(path, message)

    def extend(self, prefix: str, problems: list[tuple[str, str]]) -> None:
        for path, message in problems:
            self.add(join_dotted(prefix, path), message)

    def raise_if_any(self) -> None:
        if not self.problems:
            return
        summary = "; ".join(
            f"{path}: {message}" if path else message for path, message in self.problems
        )
        raise PydanticCustomError(
            RULES_ERROR, "{summary}", {"summary": summary, "problems": tuple(self.problems)}
        )


def join_dotted(prefix: str, path: str) -> str:
    """Join two already formatted paths (``spec`` + ``resourceGroups[0]``)."""
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"
