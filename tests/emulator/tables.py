"""Server-side printing: ``meta.k8s.io/v1`` Table responses for ``kubectl get``.

kubectl asks for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints whatever columns the server returns. For a custom resource these are
``Name`` plus the CRD's ``additionalPrinterColumns`` (or ``Name`` and ``Age``
when the CRD declares none); each cell is the first value the column's
JSONPath finds, converted to the column's type. ``date`` cells become ages
such as ``5m3s``, as the real server renders them.

Each row carries the object's metadata (``includeObject=Metadata``, the
default), the whole object (``Object``) or nothing (``None``); kubectl needs
the metadata for ``-A`` (namespace column) and ``--show-labels``.

The JSONPath subset is the one CRDs use: ``.a.b``, ``['a.b']`` and ``a\\.b``
keys, ``[0]``, ``[*]`` and filters ``[?(@.type=="Ready")]`` with ``==``,
``!=`` or bare existence.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .resources import PrinterColumn, ResourceType

NAME_COLUMN = {
    "name": "Name", "type": "string", "format": "name", "priority": 0,
    "description": "Name must be unique within a namespace. More info: "
                   "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
}
AGE_COLUMN = PrinterColumn(
    name="Age", type="date", json_path=".metadata.creationTimestamp",
    description="CreationTimestamp is a timestamp representing the server time when this "
                "object was created.",
)


class JSONPathError(ValueError):
    """A printer-column path outside the supported subset."""


@dataclasses.dataclass(frozen=True)
class _Step:
    kind: str  # key | index | all | filter
    key: str = ""
    index: int = 0
    path: tuple[_Step, ...] = ()
    op: str = ""
    literal: Any = None


_FILTER_RE = re.compile(
    r"""^\?\(\s*@(?P<path>[^=!\s]*)\s*(?:(?P<op>==|!=)\s*(?P<lit>.+?))?\s*\)$""")


def parse_path(text: str) -> tuple[_Step, ...]:
    """Parse the JSONPath subset into steps (the surrounding ``{}`` are optional)."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    steps: list[_Step] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == ".":
            pos += 1
            key = []
            while pos < len(text) and text[pos] not in ".[":
                if text[pos] == "\\" and pos + 1 < len(text):
                    pos += 1
                key.append(text[pos])
                pos += 1
            if key:
                steps.append(_Step("key", key="".join(key)))
        elif char == "[":
            end = _closing(text, pos)
            steps.append(_bracket(text[pos + 1:end], text))
            pos = end + 1
        else:
            raise JSONPathError(f"unexpected {char!r} at {pos} in JSONPath {text!r}")
    return tuple(steps)


def _closing(text: str, start: int) -> int:
    depth, quote = 0, ""
    for pos in range(start, len(text)):
        char = text[pos]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return pos
    raise JSONPathError(f"unclosed '[' in JSONPath {text!r}")


def _bracket(inner: str, text: str) -> _Step:
    inner = inner.strip()
    if inner == "*":
        return _Step("all")
    if inner.lstrip("-").isdigit():
        return _Step("index", index=int(inner))
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return _Step("key", key=inner[1:-1])
    if match := _FILTER_RE.match(inner):
        literal = None
        if match["op"]:
            raw = match["lit"].strip()
            if raw[:1] in "'\"" and raw[-1:] == raw[:1]:
                literal = raw[1:-1]
            else:
                try:
                    literal = json.loads(raw)
                except ValueError as exc:
                    raise JSONPathError(f"bad literal {raw!r} in JSONPath {text!r}") from exc
        return _Step("filter", path=parse_path(match["path"]), op=match["op"] or "exists",
                     literal=literal)
    raise JSONPathError(f"unsupported [{inner}] in JSONPath {text!r}")


def find(obj: Any, steps: Iterable[_Step]) -> list[Any]:
    """Every value the steps reach, in document order."""
    current = [obj]
    for step in steps:
        found: list[Any] = []
        for node in current:
            if step.kind == "key" and isinstance(node, Mapping) and step.key in node:
                found.append(node[step.key])
            elif step.kind == "index" and isinstance(node, list) and -len(node) <= step.index \
                    < len(node):
                found.append(node[step.index])
            elif step.kind == "all" and isinstance(node, list):
                found.extend(node)
            elif step.kind == "all" and isinstance(node, Mapping):
                found.extend(node.values())
            elif step.kind == "filter" and isinstance(node, list):
                found.extend(item for item in node if _keep(item, step))
        current = found
    return current


def _keep(item: Any, step: _Step) -> bool:
    values = find(item, step.path)
    if step.op == "exists":
        return bool(values)
    equal = bool(values) and values[0] == step.literal
    return equal if step.op == "==" else not equal


def human_duration(seconds: float) -> str:
    """An age the way kubectl prints it: 45s, 3m12s, 15m, 5h3m, 3d4h, 400d, 2y3d."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if minutes < 10:
        return f"{minutes}m{whole % 60}s" if whole % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 730:
        return f"{days}d"
    years = days // 365
    if days < 2920:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"


def _cell(value: Any, type_: str, now: datetime.datetime) -> Any:
    """Convert one found value to its column type; None prints as <none>."""
    if value is None:
        return None
    if type_ == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if type_ == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if type_ == "date":
        try:
            then = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
        return human_duration((now - then).total_seconds())
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def columns_of(rtype: ResourceType) -> tuple[PrinterColumn, ...]:
    return (AGE_COLUMN,) if rtype.columns is None else rtype.columns


def table(
    rtype: ResourceType,
    objects: Iterable[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    include_object: str = "Metadata",
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Table of the objects with the resource's printer columns."""
    columns = columns_of(rtype)
    paths = [parse_path(column.json_path) for column in columns]
    rows = []
    for obj in objects:
        cells: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for column, path in zip(columns, paths, strict=True):
            found = find(obj, path)
            cells.append(_cell(found[0] if found else None, column.type, now))
        row: dict[str, Any] = {"cells": cells}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": obj.get("metadata", {})}
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(metadata or {}),
        "columnDefinitions": [NAME_COLUMN] + [
            {"name": column.name, "type": column.type, "format": column.format,
             "description": column.description or column.json_path,
             "priority": column.priority}
            for column in columns
        ],
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a Table (kubectl lists JSON as the fallback)."""
    for media in accept.split(","):
        params = {p.split("=", 1)[0].strip(): p.split("=", 1)[-1].strip()
                  for p in media.split(";")[1:] if "=" in p}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and \
                media.split(";")[0].strip() in ("application/json", "*/*"):
            return True
    return False
