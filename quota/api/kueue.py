"""Reading Kueue manifests: ``kueue.x-k8s.io/v1beta1`` and ``v1beta2`` to ``kuota.dev/v1alpha1``.

kuota's kinds use Kueue v1beta2's field names, so a v1beta2 manifest converts
by changing ``apiVersion`` (and the group in a Workload's
``priorityClassRef``). v1beta1 needs the renames Kueue's own conversion code
performs (``apis/kueue/v1beta1/*_conversion.go``):

- ClusterQueue: ``spec.cohort`` → ``spec.cohortName``; ``spec.admissionChecks``
  (a list of names) → ``spec.admissionChecksStrategy.admissionChecks``
  (``[{name}]``); the deprecated fungibility values ``Borrow`` and
  ``Preempt`` → ``MayStopSearch``.
- LocalQueue: ``status.flavorUsage`` → ``status.flavorsUsage``.
- Workload: ``spec.priorityClassName`` + ``spec.priorityClassSource`` →
  ``spec.priorityClassRef`` (an empty source is read as a
  WorkloadPriorityClass, where Kueue would drop the name);
  ``status.accumulatedPastExexcutionTimeSeconds`` (sic) →
  ``accumulatedPastExecutionTimeSeconds``; topology assignments as
  ``domains[{values, count}]`` → ``slices``.

Conversion works on plain mappings and returns a new one; the input is not
changed. A conflict (both spellings given with different values) is reported
as ``(field, message)`` problems.

:func:`to_kueue` goes the other way (kuota's API, or either Kueue version, to
Kueue's ``v1beta2`` or ``v1beta1``). With the operator serving Kueue's own
group (``kuota operator --api kueue``), the API server calls it through the
conversion webhook (:mod:`kuota.operator.conversion`): ``v1beta2`` is stored,
``v1beta1`` is served by converting each object on its way in and out, as
Kueue's own conversion webhook does. A ``v1beta2`` field ``v1beta1`` lacks is
kept as it is (Kueue's ``v1beta1`` has every field kuota writes, under the
names above).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from quota.api.base import API_VERSION, GROUP
from quota.api.workload_status import TopologyAssignment

KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_V1BETA1: Final = f"{KUEUE_GROUP}/v1beta1"
KUEUE_V1BETA2: Final = f"{KUEUE_GROUP}/v1beta2"
ACCEPTED_API_VERSIONS: Final = (API_VERSION, KUEUE_V1BETA2, KUEUE_V1BETA1)

_V1BETA1_WORKLOAD_SOURCE: Final = "kueue.x-k8s.io/workloadpriorityclass"
_V1BETA1_POD_SOURCE: Final = "scheduling.k8s.io/priorityclass"

Doc = dict[str, Any]


def to_kuota(doc: Mapping[str, Any]) -> tuple[Doc, list[tuple[str, str]]]:
    """Convert a Kueue manifest to kuota's API. A kuota manifest comes back as a shallow
    copy (not converted, so not deep-copied: that was a third of a scheduler's rebuild);
    a Kueue one as a converted deep copy. The input is never changed."""
    problems: list[tuple[str, str]] = []
    version = doc.get("apiVersion")
    if version == KUEUE_V1BETA2:
        # Only the apiVersion and a priority class's group change: a shallow copy is enough,
        # and every Workload an operator serving Kueue's group reads comes this way.
        return _regrouped(doc, API_VERSION, KUEUE_GROUP, GROUP), problems
    if version != KUEUE_V1BETA1:
        return dict(doc), problems
    out: Doc = copy.deepcopy(dict(doc))
    _v1beta1_to_v1beta2(out, problems)
    return _regrouped(out, API_VERSION, KUEUE_GROUP, GROUP), problems


def to_kueue(doc: Mapping[str, Any], api_version: str = KUEUE_V1BETA2
             ) -> tuple[Doc, list[tuple[str, str]]]:
    """Convert a kuota or Kueue manifest to Kueue's ``api_version`` (``v1beta2`` or
    ``v1beta1``); the input is never changed. Problems as in :func:`to_kuota`."""
    if api_version not in (KUEUE_V1BETA1, KUEUE_V1BETA2):
        raise ValueError(f"not a Kueue apiVersion: {api_version!r}")
    if doc.get("apiVersion") == api_version:
        return dict(doc), []
    kuota, problems = to_kuota(doc)
    out = _regrouped(kuota, KUEUE_V1BETA2, GROUP, KUEUE_GROUP)
    if api_version == KUEUE_V1BETA1:
        out = copy.deepcopy(out)
        _v1beta2_to_v1beta1(out)
        out["apiVersion"] = KUEUE_V1BETA1
    return out, problems


def _regrouped(doc: Mapping[str, Any], api_version: str, old: str, new: str) -> Doc:
    """``doc`` under ``api_version``, a Workload's priority class of group ``old`` moved to
    group ``new``; copies only what changes."""
    out = dict(doc)
    out["apiVersion"] = api_version
    spec = out.get("spec")
    ref = spec.get("priorityClassRef") if isinstance(spec, dict) else None
    if out.get("kind") == "Workload" and isinstance(ref, dict) and ref.get("group") == old:
        assert isinstance(spec, dict)
        out["spec"] = {**spec, "priorityClassRef": {**ref, "group": new}}
    return out


def _dig(doc: Doc, *path: str) -> Any:
    node: Any = doc
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _rename(node: Any, old: str, new: str, at: str, problems: list[tuple[str, str]]) -> None:
    if not isinstance(node, dict) or old not in node:
        return
    value = node.pop(old)
    if new in node and node[new] != value:
        problems.append((f"{at}.{old}", f"conflicts with {at}.{new}; set only {new}"))
        return
    node[new] = value


def _v1beta1_to_v1beta2(doc: Doc, problems: list[tuple[str, str]]) -> None:
    kind = doc.get("kind")
    spec = doc.get("spec")
    status = doc.get("status")
    if kind == "ClusterQueue" and isinstance(spec, dict):
        _rename(spec, "cohort", "cohortName", "spec", problems)
        checks = spec.pop("admissionChecks", None)
        if checks:
            if not isinstance(checks, list):
                problems.append(("spec.admissionChecks", "must be a list of AdmissionCheck names"))
            elif spec.get("admissionChecksStrategy"):
                problems.append(
                    (
                        "spec.admissionChecks",
                        "set either admissionChecks or admissionChecksStrategy, not both",
                    )
                )
            else:
                spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
        fungibility = spec.get("flavorFungibility")
        if isinstance(fungibility, dict):
            for key, old in (("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")):
                if fungibility.get(key) == old:
                    fungibility[key] = "MayStopSearch"
        if isinstance(status, dict):
            status.pop("pendingWorkloadsStatus", None)
    elif kind == "LocalQueue" and isinstance(status, dict):
        _rename(status, "flavorUsage", "flavorsUsage", "status", problems)
        status.pop("flavors", None)
    elif kind == "Workload":
        if isinstance(spec, dict):
            _convert_priority_class(spec, problems)
        if isinstance(status, dict):
            _rename(
                status,
                "accumulatedPastExexcutionTimeSeconds",
                "accumulatedPastExecutionTimeSeconds",
                "status",
                problems,
            )
            _convert_topology_assignments(status)


def _convert_priority_class(spec: Doc, problems: list[tuple[str, str]]) -> None:
    name = spec.pop("priorityClassName", None)
    source = spec.pop("priorityClassSource", "") or ""
    if not name:
        return
    if source in ("", _V1BETA1_WORKLOAD_SOURCE):
        spec["priorityClassRef"] = {"group": GROUP, "kind": "WorkloadPriorityClass", "name": name}
    elif source == _V1BETA1_POD_SOURCE:
        spec["priorityClassRef"] = {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": name,
        }
    else:
        problems.append(
            (
                "spec.priorityClassSource",
                f"must be {_V1BETA1_WORKLOAD_SOURCE} or {_V1BETA1_POD_SOURCE} (got {source!r})",
            )
        )


def _convert_topology_assignments(status: Doc) -> None:
    assignments = _dig(status, "admission", "podSetAssignments")
    if not isinstance(assignments, list):
        return
    for assignment in assignments:
        topology = assignment.get("topologyAssignment") if isinstance(assignment, dict) else None
        if not isinstance(topology, dict) or "domains" not in topology:
            continue
        levels = list(topology.get("levels") or [])
        domains = [d for d in topology.pop("domains") or [] if isinstance(d, dict)]
        if not domains:
            continue
        topology["slices"] = [
            {
                "domainCount": len(domains),
                "valuesPerLevel": [
                    {"individual": {"roots": [list(d.get("values") or [])[i] for d in domains]}}
                    for i in range(len(levels))
                ],
                "podCounts": {"individual": [d.get("count", 0) for d in domains]},
            }
        ]


def _v1beta2_to_v1beta1(doc: Doc) -> None:
    """Kueue's renames, backwards, in place (``doc`` is a deep copy in ``v1beta2``)."""
    kind = doc.get("kind")
    spec = doc.get("spec")
    status = doc.get("status")
    if kind == "ClusterQueue" and isinstance(spec, dict) and "cohortName" in spec:
        spec["cohort"] = spec.pop("cohortName")
    elif kind == "LocalQueue" and isinstance(status, dict) and "flavorsUsage" in status:
        status["flavorUsage"] = status.pop("flavorsUsage")
    elif kind == "Workload":
        ref = spec.pop("priorityClassRef", None) if isinstance(spec, dict) else None
        if isinstance(spec, dict) and isinstance(ref, dict) and ref.get("name"):
            pod = ref.get("group") == "scheduling.k8s.io"
            spec["priorityClassName"] = ref["name"]
            spec["priorityClassSource"] = _V1BETA1_POD_SOURCE if pod else _V1BETA1_WORKLOAD_SOURCE
        if isinstance(status, dict):
            if "accumulatedPastExecutionTimeSeconds" in status:
                status["accumulatedPastExexcutionTimeSeconds"] = status.pop(
                    "accumulatedPastExecutionTimeSeconds")
            _expand_topology_assignments(status)


def _expand_topology_assignments(status: Doc) -> None:
    """``slices`` (v1beta2's compact encoding) back to one ``{values, count}`` per domain."""
    assignments = _dig(status, "admission", "podSetAssignments")
    if not isinstance(assignments, list):
        return
    for assignment in assignments:
        topology = assignment.get("topologyAssignment") if isinstance(assignment, dict) else None
        if not isinstance(topology, dict) or "slices" not in topology:
            continue
        parsed = TopologyAssignment.model_validate(topology)
        topology.pop("slices")
        topology["domains"] = [{"values": list(values), "count": count}
                               for values, count in parsed.domains()]
