"""Kubernetes Node and Pod objects (plain JSON mappings) → placement values.

Pure translation: the caller hands in the decoded JSON of a ``v1.Node`` or
``v1.Pod`` (what kube-scheduler posts to an extender, or what a watch yields
after ``sanitize_for_serialization``); no client library is involved. Bad input
raises :class:`ObjectError` naming the object and the field path.

A pod's request for a resource follows kube-scheduler (``PodRequests``):

* the sum over ``spec.containers``;
* init containers run one by one before them, so the pod needs the
  **maximum** of that sum and each init container's request — except that
  sidecars (init containers with ``restartPolicy: Always``) keep running, so
  each sidecar adds to the sum and to every later init container's need;
* plus ``spec.overhead`` (RuntimeClass overhead).

For scoring, kube-scheduler first substitutes 100m CPU and 200Mi memory for a
container that sets no CPU or memory request (``nonzero_requests``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from placement.model import (
    ModelError,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodRequirements,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from quota.resources import MILLI, Amount, QuantityError, parse_amount

#: kube-scheduler's stand-ins for a missing CPU / memory request, in milli-units.
DEFAULT_CPU_REQUEST: Final = 100
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024 * MILLI

_NONZERO_DEFAULTS: Final = {"cpu": DEFAULT_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}


class ObjectError(ModelError):
    """A Kubernetes object that cannot be read."""


def _get(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise ObjectError(f"{where}.{key}: expected {kind.__name__}, "
                          f"got {type(value).__name__}")
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ObjectError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _resources(raw: Mapping[str, Any], where: str) -> dict[str, Amount]:
    vector: dict[str, Amount] = {}
    for name, quantity in raw.items():
        try:
            vector[str(name)] = parse_amount(quantity)
        except QuantityError as exc:
            raise ObjectError(f"{where}.{name}: {exc}") from None
    return vector


def object_name(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "?"
    name = str(meta.get("name") or "?")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def node_from_object(obj: Mapping[str, Any]) -> Node:
    """A ``v1.Node`` → :class:`Node` with nothing requested yet (usage comes
    from the pods bound to it, which the node object does not list)."""
    obj = _mapping(obj, "node")
    meta = _get(obj, "metadata", dict, "node")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError("node: metadata.name must be a non-empty string")
    where = f"node {name}"
    labels = {str(k): str(v) for k, v in _get(meta, "labels", dict, f"{where}: metadata").items()}
    spec = _get(obj, "spec", dict, where)
    status = _get(obj, "status", dict, where)
    allocatable = _resources(_get(status, "allocatable", dict, f"{where}: status"),
                             f"{where}: status.allocatable")
    taints = []
    for i, raw in enumerate(_get(spec, "taints", list, f"{where}: spec")):
        at = f"{where}: spec.taints[{i}]"
        raw = _mapping(raw, at)
        try:
            effect = TaintEffect(str(raw.get("effect")))
        except ValueError:
            raise ObjectError(f"{at}.effect: {raw.get('effect')!r} is not a taint effect") \
                from None
        key = raw.get("key")
        if not isinstance(key, str) or not key:
            raise ObjectError(f"{at}.key must be a non-empty string")
        taints.append(Taint(key, effect, str(raw.get("value") or "")))
    try:
        return Node(name=name, allocatable=allocatable, labels=labels, taints=tuple(taints),
                    unschedulable=bool(spec.get("unschedulable", False)))
    except ModelError as exc:
        raise ObjectError(str(exc)) from None


def _container_requests(containers: list[Any], where: str, nonzero: bool
                        ) -> list[tuple[dict[str, Amount], bool]]:
    """(requests, is_sidecar) per container."""
    out = []
    for i, raw in enumerate(containers):
        at = f"{where}[{i}]"
        raw = _mapping(raw, at)
        resources = _get(raw, "resources", dict, at)
        requests = _resources(_get(resources, "requests", dict, f"{at}.resources"),
                              f"{at}.resources.requests")
        if nonzero:
            for name, default in _NONZERO_DEFAULTS.items():
                requests.setdefault(name, default)
        out.append((requests, raw.get("restartPolicy") == "Always"))
    return out


def pod_requests(spec: Mapping[str, Any], where: str = "pod", *, nonzero: bool = False
                 ) -> dict[str, Amount]:
    """The pod's effective request vector (see the module docstring)."""
    total: dict[str, Amount] = {}
    for requests, _ in _container_requests(_get(spec, "containers", list, where),
                                           f"{where}.containers", nonzero):
        for name, amount in requests.items():
            total[name] = total.get(name, 0) + amount
    sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    for requests, sidecar in _container_requests(_get(spec, "initContainers", list, where),
                                                 f"{where}.initContainers", nonzero):
        if sidecar:
            for name, amount in requests.items():
                total[name] = total.get(name, 0) + amount
                sidecars[name] = sidecars.get(name, 0) + amount
            need = dict(sidecars)
        else:
            need = dict(requests)
            for name, amount in sidecars.items():
                need[name] = need.get(name, 0) + amount
        for name, amount in need.items():
            init_peak[name] = max(init_peak.get(name, 0), amount)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0), amount)
    overhead = _resources(_get(spec, "overhead", dict, where), f"{where}.overhead")
    for name, amount in overhead.items():
        total[name] = total.get(name, 0) + amount
    return {name: amount for name, amount in total.items() if amount}


def _requirement(raw: Any, where: str) -> NodeSelectorRequirement:
    raw = _mapping(raw, where)
    try:
        operator = SelectorOperator(raw.get("operator"))
    except ValueError:
        raise ObjectError(f"{where}.operator: {raw.get('operator')!r} is not a node "
                          "selector operator") from None
    values = _get(raw, "values", list, where)
    try:
        return NodeSelectorRequirement(str(raw.get("key") or ""), operator,
                                       tuple(str(v) for v in values))
    except ModelError as exc:
        raise ObjectError(f"{where}: {exc}") from None


def _required_terms(spec: Mapping[str, Any], where: str) -> tuple[NodeSelectorTerm, ...] | None:
    affinity = _get(spec, "affinity", dict, where)
    node_affinity = _get(affinity, "nodeAffinity", dict, f"{where}.affinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    at = f"{where}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = _mapping(required, at)
    terms = []
    for i, raw in enumerate(_get(required, "nodeSelectorTerms", list, at)):
        term_at = f"{at}.nodeSelectorTerms[{i}]"
        raw = _mapping(raw, term_at)
        exprs = tuple(_requirement(r, f"{term_at}.matchExpressions[{j}]")
                      for j, r in enumerate(_get(raw, "matchExpressions", list, term_at)))
        fields = tuple(_requirement(r, f"{term_at}.matchFields[{j}]")
                       for j, r in enumerate(_get(raw, "matchFields", list, term_at)))
        try:
            terms.append(NodeSelectorTerm(exprs, fields))
        except ModelError as exc:
            raise ObjectError(f"{term_at}: {exc}") from None
    return tuple(terms)


def _tolerations(spec: Mapping[str, Any], where: str) -> tuple[Toleration, ...]:
    out = []
    for i, raw in enumerate(_get(spec, "tolerations", list, where)):
        at = f"{where}.tolerations[{i}]"
        raw = _mapping(raw, at)
        try:
            operator = TolerationOperator(raw.get("operator") or "Equal")
            effect = TaintEffect(raw["effect"]) if raw.get("effect") else None
            out.append(Toleration(str(raw.get("key") or ""), operator,
                                  str(raw.get("value") or ""), effect))
        except ValueError as exc:
            raise ObjectError(f"{at}: {exc}") from None
    return tuple(out)


def pod_from_object(obj: Mapping[str, Any]) -> PodRequirements:
    """A ``v1.Pod`` → its :class:`PodRequirements`."""
    obj = _mapping(obj, "pod")
    name = object_name(obj)
    where = f"pod {name}: spec"
    spec = _get(obj, "spec", dict, f"pod {name}")
    selector = {str(k): str(v) for k, v in _get(spec, "nodeSelector", dict, where).items()}
    return PodRequirements(
        requests=pod_requests(spec, where),
        nonzero_requests=pod_requests(spec, where, nonzero=True),
        node_selector=selector,
        required_terms=_required_terms(spec, where),
        tolerations=_tolerations(spec, where),
        name=name,
    )
