"""Every kind by name, and turning a mapping into a checked object or a list of problems.

``parse_object`` is the one door from untyped data (YAML documents, API
server events) into the typed models: it converts Kueue manifests, defaults
the namespace of namespaced kinds to ``default`` (as ``kubectl`` does with a
default context), validates, and reports every problem with the field path
spelled as in the manifest.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import ValidationError

from quota.api.base import RULES_ERROR, join_dotted, join_path
from quota.api.kueue import ACCEPTED_API_VERSIONS, to_kuota
from quota.api.meta import ApiObject
from quota.api.problems import ObjectError, Problem
from quota.resources import short_repr


class _Kinds(Mapping[str, type[ApiObject]]):
    """Every kind by its ``kind`` string; a kind's module is imported when first asked for,
    so parsing a Workload does not build the ClusterQueue models (CLI start-up)."""

    _MODULES: Final = {
        "ResourceFlavor": "resourceflavor", "Cohort": "cohort", "ClusterQueue": "clusterqueue",
        "LocalQueue": "localqueue", "WorkloadPriorityClass": "priorityclass",
        "Workload": "workload", "Topology": "topology", "AdmissionCheck": "admissioncheck",
        "MemberCluster": "membercluster", "MultiClusterConfig": "multiclusterconfig",
    }

    def __init__(self) -> None:
        self._loaded: dict[str, type[ApiObject]] = {}

    def __getitem__(self, kind: str) -> type[ApiObject]:
        cls = self._loaded.get(kind)
        if cls is None:
            cls = self._loaded[kind] = getattr(
                importlib.import_module(f"quota.api.{self._MODULES[kind]}"), kind)
        return cls

    def __contains__(self, kind: object) -> bool:
        return kind in self._MODULES

    def __iter__(self) -> Iterator[str]:
        return iter(self._MODULES)

    def __len__(self) -> int:
        return len(self._MODULES)


#: Every kind, by its ``kind`` string.
KINDS: Final = _Kinds()


def parse_object(doc: Mapping[str, Any], *, source: str = "") -> ApiObject:
    """Check one manifest and return its typed object; raise :class:`ObjectError` otherwise."""
    if not isinstance(doc, Mapping):
        raise ObjectError(
            [
                Problem(
                    source, "", "", "", f"expected an object (a mapping), got {type(doc).__name__}"
                )
            ]
        )
    kind = doc.get("kind")
    name = _name_of(doc)
    if not isinstance(kind, str) or kind not in KINDS:
        raise ObjectError(
            [
                Problem(
                    source,
                    str(kind or ""),
                    name,
                    "kind",
                    f"unknown kind {kind!r}; expected one of {', '.join(sorted(KINDS))}",
                )
            ]
        )
    if doc.get("apiVersion") not in ACCEPTED_API_VERSIONS:
        raise ObjectError(
            [
                Problem(
                    source,
                    kind,
                    name,
                    "apiVersion",
                    f"unsupported apiVersion {doc.get('apiVersion')!r}; expected "
                    f"{' or '.join(ACCEPTED_API_VERSIONS)}",
                )
            ]
        )
    if _deeper_than(doc, MAX_DEPTH):
        raise ObjectError([Problem(source, kind, name, "", "nested too deeply")])
    try:
        return _validate(doc, source=source, kind=kind, name=name)
    except RecursionError:
        # Input nested thousands deep (a raw write, a fuzzer): refuse it, never crash on it.
        raise ObjectError([Problem(source, kind, name, "", "nested too deeply")]) from None


#: No kuota or Kueue object nests anywhere near this deep; input that does (a raw write, a
#: fuzzer) is refused before it reaches code that recurses over it.
MAX_DEPTH: Final = 64


#: What JSON and YAML leaves are: never pushed (checking each against ``Mapping``, an ABC,
#: was a third of reading a Workload).
_LEAVES: Final = (str, int, float, type(None))


def _deeper_than(doc: Any, limit: int) -> bool:
    """Whether ``doc`` nests containers more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, list):
            children: Any = node
        elif isinstance(node, Mapping):
            children = node.values()
        else:
            continue
        if depth > limit:
            return True
        stack.extend((v, depth + 1) for v in children if not isinstance(v, _LEAVES))
    return False


def _validate(doc: Mapping[str, Any], *, source: str, kind: str, name: str) -> ApiObject:
    converted, conversion_problems = to_kuota(doc)
    if conversion_problems:
        raise ObjectError([Problem(source, kind, name, f, m) for f, m in conversion_problems])
    cls = KINDS[kind]
    metadata = converted.get("metadata")
    if cls.namespaced and isinstance(metadata, dict) and not metadata.get("namespace"):
        converted["metadata"] = {**metadata, "namespace": "default"}  # the input stays as given
    try:
        return cls.model_validate(converted)
    except ValidationError as exc:
        raise ObjectError(problems_from(exc, source=source, kind=kind, name=name)) from None


def _name_of(doc: Mapping[str, Any]) -> str:
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return str(name) if name else "(unnamed)"


def loc_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path = join_path(path, part)
    return path


_GENERIC: Final = {
    "missing": "is required",
    "extra_forbidden": "unknown field (check the spelling; see docs/reference/api.md)",
}


def problems_from(
    exc: ValidationError, *, source: str, kind: str, name: str, prefix: str = ""
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, with manifest-style field paths."""
    problems: list[Problem] = []
    errors = exc.errors(include_url=False)
    failed = [tuple(e["loc"]) for e in errors]
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "too_short" and any(f[: len(loc)] == loc and f != loc for f in failed):
            continue  # pydantic counts only valid items; the item's own error says it all
        path = join_dotted(prefix, loc_path(loc))
        if error["type"] == RULES_ERROR:
            for rel, message in error["ctx"]["problems"]:
                problems.append(Problem(source, kind, name, join_dotted(path, rel), message))
            continue
        problems.append(Problem(source, kind, name, path, _message(error)))
    return problems


def _message(error: Any) -> str:
    if error["type"] in _GENERIC:
        return str(_GENERIC[error["type"]])
    message = str(error["msg"])
    if message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    message = message.replace("Input should be", "must be").replace("input should be", "must be")
    value = error.get("input")
    if isinstance(value, str | int | float | bool) or value is None:
        message += f" (got {short_repr(value)})"
    return message
