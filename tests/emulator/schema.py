"""What a real API server does to a custom resource with its CRD's openAPIV3Schema.

Three steps, in the server's order, on every create and update:

1. **Pruning.** Fields the schema does not declare are dropped silently
   (unless ``x-kubernetes-preserve-unknown-fields: true``). This matters for
   tests: an operator that writes an undeclared status field "works" against a
   lax fake and loses the field on a real cluster.
2. **Defaulting.** ``default:`` values fill absent properties of objects that
   are present.
3. **Validation.** ``type`` (with ``nullable`` and
   ``x-kubernetes-int-or-string``), ``enum``, ``required``, ``minimum`` /
   ``maximum``, ``minLength`` / ``maxLength``, ``pattern``, ``minItems`` /
   ``maxItems``. Violations are collected as ``path: message`` strings; the
   server answers 422 with all of them. CEL rules
   (``x-kubernetes-validations``) are not evaluated.

``metadata``, ``apiVersion`` and ``kind`` at the root are never pruned or
validated here; the store owns them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .patches import clone

_ROOT_KEYS = ("apiVersion", "kind", "metadata")


def prune(value: Any, schema: Mapping[str, Any] | None, *, root: bool = False) -> Any:
    """A copy of ``value`` without the fields ``schema`` does not declare."""
    if schema is None or not isinstance(value, (dict, list)):
        return clone(value)
    if isinstance(value, list):
        items = schema.get("items")
        return [prune(item, items) if isinstance(items, Mapping) else clone(item)
                for item in value]
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    result = {}
    for key, item in value.items():
        if (root or embedded) and key in _ROOT_KEYS:
            result[key] = clone(item)
        elif key in properties:
            result[key] = prune(item, properties[key])
        elif isinstance(additional, Mapping):
            result[key] = prune(item, additional)
        elif keep_unknown or additional is True:
            result[key] = clone(item)
    return result


def apply_defaults(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """A copy of ``value`` with absent properties set from their schema defaults."""
    if schema is None:
        return clone(value)
    if isinstance(value, list):
        items = schema.get("items")
        return [apply_defaults(item, items) if isinstance(items, Mapping) else item
                for item in value]
    if not isinstance(value, dict):
        return clone(value)
    result = clone(value)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for key, subschema in properties.items():
        if key not in result and "default" in subschema:
            result[key] = clone(subschema["default"])
        if key in result:
            result[key] = apply_defaults(result[key], subschema)
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        for key in result:
            if key not in properties:
                result[key] = apply_defaults(result[key], additional)
    return result


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    expected = schema.get("type")
    if expected is None:
        return True
    if isinstance(value, bool) and expected != "boolean":
        return False
    return isinstance(value, _TYPES.get(expected, (object,)))


def validate(value: Any, schema: Mapping[str, Any] | None, path: str = "") -> list[str]:
    """Every violation of ``schema`` by ``value``, as ``path: message`` strings."""
    if schema is None:
        return []
    where = path or "<root>"
    if value is None:
        return [] if schema.get("nullable") else [f"{where}: Invalid value: \"null\": "
                                                  f"{where} in body must be of type "
                                                  f"{schema.get('type', 'object')}"]
    if not _type_ok(value, schema):
        return [f"{where}: Invalid value: \"{_kind_of(value)}\": {where} in body must be "
                f"of type {schema.get('type') or 'integer or string'}: \"{_kind_of(value)}\""]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"])
        errors.append(f"{where}: Unsupported value: {value!r}: supported values: {allowed}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: Invalid value: {value}: {where} in body should be "
                          f"greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: Invalid value: {value}: {where} in body should be "
                          f"less than or equal to {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{where}: Invalid value: {value!r}: {where} in body should be at "
                          f"least {schema['minLength']} chars long")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: Too long: may not be more than {schema['maxLength']} bytes")
        if "pattern" in schema and not re.search(go_pattern(schema["pattern"]), value):
            errors.append(f"{where}: Invalid value: {value!r}: {where} in body should match "
                          f"'{schema['pattern']}'")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{where}: Invalid value: {len(value)}: {where} in body should have "
                          f"at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{where}: Too many: {len(value)}: must have at most "
                          f"{schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                errors += validate(item, items, f"{path}[{index}]")
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for required in schema.get("required") or ():
            if required not in value:
                errors.append(f"{_join(path, required)}: Required value")
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            if not path and key in _ROOT_KEYS:
                continue
            subschema = properties.get(key, additional if isinstance(additional, Mapping)
                                        else None)
            errors += validate(item, subschema, _join(path, key))
    return errors


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    for name in ("object", "array", "string", "integer", "number"):
        if isinstance(value, _TYPES[name]):
            return name
    return type(value).__name__


def admit(obj: Mapping[str, Any], schema: Mapping[str, Any] | None) -> tuple[Any, list[str]]:
    """Prune, default and validate a whole custom resource: ``(new object, errors)``."""
    if schema is None:
        return clone(obj), []
    pruned = prune(obj, schema, root=True)
    defaulted = apply_defaults(pruned, schema)
    return defaulted, validate(defaulted, schema)


def go_pattern(pattern: str) -> str:
    """A Go (RE2) pattern in Python's syntax: RE2 allows flags such as ``(?i)`` anywhere
    (``^(?i)[a-z]+``); Python only at the start, so leading flags move to the front."""
    match = re.match(r"^\^\(\?([a-zA-Z]+)\)", pattern)
    if match:
        return f"(?{match.group(1)})^{pattern[match.end():]}"
    return pattern
