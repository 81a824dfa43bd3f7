"""Nothing of Kueue's API silently ignored: every Kueue v1beta2 spec field is implemented or
refused by name.

``kueue_v1beta2_fields.txt`` lists every spec field of Kueue's ClusterQueue, LocalQueue,
Cohort, ResourceFlavor, Workload, AdmissionCheck, Topology and WorkloadPriorityClass, as
Kueue's CRDs define them. Each must be in :data:`IMPLEMENTED` (naming a test or scenario
that shows the field has an effect), in :data:`REFUSED` (with a value that the models
refuse, naming the field), or be covered by its parent (a refused object refuses all it
holds; an object whose fields are all covered is covered). A field Kueue adds and kuota
does not handle fails :func:`test_every_kueue_field_is_implemented_or_refused`.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from quota import api
from quota.api import unimplemented

ROOT = Path(__file__).resolve().parents[3]
FIELDS_FILE = Path(__file__).with_name("kueue_v1beta2_fields.txt")

SCENARIO = "tests/scenarios/"
OPERATOR = "tests/unit/operator/"
ADMISSION = "tests/unit/admission/"
RESOURCE_GROUPS = {
    "spec.resourceGroups[].coveredResources": SCENARIO + "partial-admission.yaml",
    "spec.resourceGroups[].flavors[].name": SCENARIO + "flavor-fallback.yaml",
    "spec.resourceGroups[].flavors[].resources[].name": SCENARIO + "pods-quota.yaml",
    "spec.resourceGroups[].flavors[].resources[].nominalQuota": SCENARIO + "borrowing-limit.yaml",
    "spec.resourceGroups[].flavors[].resources[].borrowingLimit":
        SCENARIO + "borrowing-limit.yaml",
    "spec.resourceGroups[].flavors[].resources[].lendingLimit": SCENARIO + "lending-limit.yaml",
}

#: (kind, field) -> the test (``path::function``) or scenario showing the field's effect.
IMPLEMENTED: dict[tuple[str, str], str] = {
    ("AdmissionCheck", "spec.controllerName"): SCENARIO + "admission-checks.yaml",
    **{("AdmissionCheck", f"spec.parameters.{part}"): SCENARIO + "multicluster-cost.yaml"
       for part in ("apiGroup", "kind", "name")},
    ("ClusterQueue", "spec.admissionChecksStrategy.admissionChecks[].name"):
        SCENARIO + "admission-checks.yaml",
    ("ClusterQueue", "spec.admissionChecksStrategy.admissionChecks[].onFlavors"):
        SCENARIO + "admission-checks.yaml",
    ("ClusterQueue", "spec.cohortName"): SCENARIO + "borrowing-within-cohort.yaml",
    ("ClusterQueue", "spec.fairSharing.weight"): SCENARIO + "fair-sharing-weights.yaml",
    ("ClusterQueue", "spec.flavorFungibility.preference"):
        SCENARIO + "flavor-by-preemption-mode.yaml",
    ("ClusterQueue", "spec.flavorFungibility.whenCanBorrow"):
        SCENARIO + "fungibility-when-can-borrow.yaml",
    ("ClusterQueue", "spec.flavorFungibility.whenCanPreempt"):
        SCENARIO + "fungibility-when-can-preempt.yaml",
    ("ClusterQueue", "spec.namespaceSelector"): SCENARIO + "namespace-selector.yaml",
    ("ClusterQueue", "spec.preemption.borrowWithinCohort.maxPriorityThreshold"):
        SCENARIO + "borrow-within-cohort.yaml",
    ("ClusterQueue", "spec.preemption.borrowWithinCohort.policy"):
        SCENARIO + "borrow-within-cohort.yaml",
    ("ClusterQueue", "spec.preemption.reclaimWithinCohort"): SCENARIO + "reclaim-policies.yaml",
    ("ClusterQueue", "spec.preemption.withinClusterQueue"):
        SCENARIO + "priority-preemption-within-cluster-queue.yaml",
    ("ClusterQueue", "spec.queueingStrategy"): SCENARIO + "strict-fifo.yaml",
    ("ClusterQueue", "spec.stopPolicy"): SCENARIO + "hold-and-drain.yaml",
    **{("ClusterQueue", path): test for path, test in RESOURCE_GROUPS.items()},
    ("Cohort", "spec.fairSharing.weight"): SCENARIO + "fair-sharing-nested-victim-search.yaml",
    ("Cohort", "spec.parentName"): SCENARIO + "hierarchical-cohorts.yaml",
    **{("Cohort", path): SCENARIO + "cohort-own-quota.yaml" for path in RESOURCE_GROUPS},
    ("LocalQueue", "spec.clusterQueue"): SCENARIO + "best-effort-fifo.yaml",
    ("LocalQueue", "spec.stopPolicy"): SCENARIO + "stop-policy-hold.yaml",
    ("ResourceFlavor", "spec.nodeLabels"): SCENARIO + "flavor-node-selector.yaml",
    ("ResourceFlavor", "spec.nodeTaints"): SCENARIO + "flavor-taints-and-tolerations.yaml",
    ("ResourceFlavor", "spec.tolerations"): SCENARIO + "flavor-taints-and-tolerations.yaml",
    ("ResourceFlavor", "spec.topologyName"): SCENARIO + "topology-required-rack.yaml",
    ("Topology", "spec.levels[].nodeLabel"): SCENARIO + "topology-required-rack.yaml",
    ("WorkloadPriorityClass", "value"):
        SCENARIO + "priority-preemption-within-cluster-queue.yaml",
    # Kueue gives it no effect either: text for the people choosing a class (kept, shown).
    ("WorkloadPriorityClass", "description"):
        "tests/unit/api/test_kueue_fields.py::test_a_priority_class_keeps_its_description",
    ("Workload", "spec.active"): OPERATOR + "test_operator_controller.py::"
                                            "test_finished_and_inactive_workloads_hold_nothing",
    ("Workload", "spec.maximumExecutionTimeSeconds"): SCENARIO + "maximum-execution-time.yaml",
    ("Workload", "spec.podSets[].count"): SCENARIO + "gang-waits-whole.yaml",
    ("Workload", "spec.podSets[].minCount"): SCENARIO + "partial-admission.yaml",
    ("Workload", "spec.podSets[].name"): SCENARIO + "gang-multiple-pod-sets.yaml",
    ("Workload", "spec.podSets[].template"):
        "tests/unit/api/test_api_pod_requests.py::test_pod_requests",
    ("Workload", "spec.podSets[].topologyRequest.required"):
        SCENARIO + "topology-required-rack.yaml",
    ("Workload", "spec.podSets[].topologyRequest.preferred"):
        SCENARIO + "topology-preferred-and-best-fit.yaml",
    ("Workload", "spec.preemptionGates[].name"): SCENARIO + "preemption-gates.yaml",
    ("Workload", "spec.priority"): SCENARIO + "priority-order.yaml",
    **{("Workload", f"spec.priorityClassRef.{part}"):
       "tests/integration/operator/test_operator_priorities.py::"
       "test_the_workload_gets_its_priority_and_class"
       for part in ("group", "kind", "name")},
    ("Workload", "spec.queueName"): SCENARIO + "best-effort-fifo.yaml",
}

_TOPOLOGY = "spec.podSets[].topologyRequest."
#: (kind, field) -> a value kuota refuses there, naming the field.
REFUSED: dict[tuple[str, str], Any] = {
    ("ClusterQueue", "spec.admissionScope.admissionMode"): "UsageBasedAdmissionFairSharing",
    ("ClusterQueue", "spec.concurrentAdmissionPolicy"):
        {"migration": {"mode": "TryPreferredFlavors"}},
    ("LocalQueue", "spec.fairSharing"): {"weight": 2},
    ("Workload", _TOPOLOGY + "unconstrained"): True,
    ("Workload", _TOPOLOGY + "podIndexLabel"): "example.com/index",
    ("Workload", _TOPOLOGY + "subGroupIndexLabel"): "example.com/group-index",
    ("Workload", _TOPOLOGY + "subGroupCount"): 2,
    ("Workload", _TOPOLOGY + "podSetGroupName"): "together",
    ("Workload", _TOPOLOGY + "podSetSliceRequiredTopology"): "example.com/rack",
    ("Workload", _TOPOLOGY + "podSetSliceSize"): 2,
    ("Workload", _TOPOLOGY + "podsetSliceRequiredTopologyConstraints"):
        [{"topology": "example.com/rack", "size": 2}],
}

#: A valid object of each kind, to which a refused field is added.
MINIMAL: dict[str, dict[str, Any]] = {
    "ClusterQueue": {"spec": {}},
    "LocalQueue": {"spec": {"clusterQueue": "cq"}},
    "Workload": {"spec": {"podSets": [{"name": "main", "count": 1, "template": {
        "spec": {"containers": [{"name": "c"}]}}}]}},
}


def kueue_fields() -> list[tuple[str, str]]:
    lines = FIELDS_FILE.read_text().splitlines()
    return [tuple(line.split(" ", 1)) for line in lines  # type: ignore[misc]
            if line.strip() and not line.startswith("#")]


def covered(kind: str, path: str, fields: set[tuple[str, str]]) -> bool:
    if (kind, path) in IMPLEMENTED or (kind, path) in REFUSED:
        return True
    parts = path.split(".")
    if any((kind, ".".join(parts[:i]).removesuffix("[]")) in REFUSED
           for i in range(1, len(parts))):
        return True
    children = [p for k, p in fields if k == kind and _is_child(p, path)]
    return bool(children) and all(covered(kind, child, fields) for child in children)


def _is_child(candidate: str, parent: str) -> bool:
    """``candidate`` is one level under ``parent`` (through a list's items too)."""
    for prefix in (parent + ".", parent + "[]."):
        if candidate.startswith(prefix) and "." not in candidate[len(prefix):]:
            return True
    return False


def test_every_kueue_field_is_implemented_or_refused() -> None:
    fields = set(kueue_fields())
    missing = sorted(f"{kind} {path}" for kind, path in fields
                     if not covered(kind, path, fields))
    assert missing == [], ("Kueue fields neither implemented (a test showing it) nor refused "
                           "by name: " + ", ".join(missing))


def test_the_tables_name_only_kueue_fields() -> None:
    fields = set(kueue_fields())
    assert sorted(set(IMPLEMENTED) - fields) == []
    assert sorted(set(REFUSED) - fields) == []
    assert sorted(set(IMPLEMENTED) & set(REFUSED)) == []


@pytest.mark.parametrize("evidence", sorted(set(IMPLEMENTED.values())))
def test_each_implemented_field_names_a_test_that_exists(evidence: str) -> None:
    path, _, function = evidence.partition("::")
    source = ROOT / path
    assert source.is_file(), f"{path} does not exist"
    if function:
        assert re.search(rf"^\s*(async )?def {function}\(", source.read_text(), re.MULTILINE), \
            f"{path} has no test {function}"


def _set(doc: dict[str, Any], path: str, value: Any) -> str:
    """Put ``value`` at ``path`` (lists: their first item); the path as problems name it."""
    node: Any = doc
    named: list[str] = []
    parts = path.split(".")
    for i, part in enumerate(parts):
        is_list = part.endswith("[]")
        key = part.removesuffix("[]")
        named.append(f"{key}[0]" if is_list else key)
        if i == len(parts) - 1:
            node[key] = value
        elif is_list:
            node = node[key][0]
        else:
            node = node.setdefault(key, {})
    return ".".join(named)


@pytest.mark.parametrize(("kind", "path"), sorted(REFUSED))
def test_a_refused_field_is_refused_by_name(kind: str, path: str) -> None:
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
           "metadata": {"name": "x", "namespace": "ns"}, **copy.deepcopy(MINIMAL[kind])}
    field = _set(doc, path, REFUSED[(kind, path)])
    with pytest.raises(api.ObjectError) as caught:
        api.parse_object(doc, source="test")
    problems = [(p.field, p.message) for p in caught.value.problems]
    assert any(f == field and "kuota does not implement" in m for f, m in problems), problems


@pytest.mark.parametrize(("kind", "path"), sorted(REFUSED))
def test_a_refused_field_is_listed_in_the_docs(kind: str, path: str) -> None:
    docs = (ROOT / "docs" / "concepts.md").read_text()
    name = path.rsplit(".", 1)[-1]
    assert re.search(rf"`[^`\n]*\b{name}\b[^`\n]*`", docs), f"{name} not in docs/concepts.md"


@pytest.mark.parametrize(("kind", "spec"), [
    ("ClusterQueue", {"admissionScope": {"admissionMode": "NoAdmissionFairSharing"}}),
    ("LocalQueue", {"clusterQueue": "cq"}),
    ("Workload", {"podSets": [{"name": "main", "template": {"spec": {"containers": [
        {"name": "c"}]}}, "topologyRequest": {"required": "rack", "unconstrained": False}}]}),
])
def test_what_asks_for_nothing_unimplemented_is_accepted(kind: str, spec: dict[str, Any]
                                                         ) -> None:
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
           "metadata": {"name": "x", "namespace": "ns"}, "spec": spec}
    assert api.parse_object(doc, source="test").kind == kind


def test_a_priority_class_keeps_its_description() -> None:
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
           "metadata": {"name": "high"}, "value": 100, "description": "for the on-call team"}
    obj = api.parse_object(doc, source="test")
    assert obj.to_dict()["description"] == "for the on-call team"


def test_the_refusal_says_what_is_not_implemented() -> None:
    text = unimplemented.message(unimplemented.ADMISSION_FAIR_SHARING)
    assert "admission fair sharing" in text and "not implement" in text
