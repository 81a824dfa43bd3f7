"""Every validation rule (Kueue's webhooks and CEL rules) rejects a bad manifest, naming the field.

Each case starts from a valid manifest, changes one thing, and asserts the
problem's field path and message — so a rule that stops firing, or fires on
the wrong field, fails here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from api_builders import DELETE, edit, valid

from quota import api

RG0 = "spec.resourceGroups[0]"
GPU = "spec.resourceGroups[1]"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    changes: dict[str, Any]
    want_field: str
    want_message: str
    extra: dict[str, Any] = field(default_factory=dict)


CASES = [
    # --- names ---------------------------------------------------------------------------
    Case(
        "cluster-scoped name is a DNS subdomain",
        "ClusterQueue",
        {"metadata.name": "Team_A"},
        "metadata.name",
        "is not a DNS-1123 subdomain",
    ),
    Case(
        "name is required",
        "ResourceFlavor",
        {"metadata.name": DELETE},
        "metadata.name",
        "must not be empty",
    ),
    Case(
        "namespace is a DNS label",
        "LocalQueue",
        {"metadata.namespace": "team.a"},
        "metadata.namespace",
        "is not a DNS-1123 label",
    ),
    Case(
        "cohortName is a DNS subdomain",
        "ClusterQueue",
        {"spec.cohortName": "Research"},
        "spec.cohortName",
        "is not a DNS-1123 subdomain",
    ),
    Case(
        "flavor reference is a DNS subdomain",
        "ClusterQueue",
        {f"{RG0}.flavors[0].name": "on_demand"},
        f"{RG0}.flavors[0].name",
        "DNS-1123",
    ),
    Case(
        "resource name is a qualified name",
        "ClusterQueue",
        {
            f"{GPU}.coveredResources[0]": "nvidia.com/gpu!",
            f"{GPU}.flavors[0].resources[0].name": "nvidia.com/gpu!",
        },
        f"{GPU}.coveredResources[0]",
        "is not a qualified name",
    ),
    Case(
        "podSet name is a DNS label",
        "Workload",
        {"spec.podSets[0].name": "Driver"},
        "spec.podSets[0].name",
        "is not a DNS-1123 label",
    ),
    Case(
        "localQueue clusterQueue is required",
        "LocalQueue",
        {"spec.clusterQueue": DELETE},
        "spec.clusterQueue",
        "is required",
    ),
    # --- unknown fields and enums -------------------------------------------------------------
    Case(
        "typo in spec is an error",
        "ClusterQueue",
        {"spec.cohort_name": "x"},
        "spec.cohort_name",
        "unknown field",
    ),
    Case(
        "typo deep in spec is an error",
        "ClusterQueue",
        {f"{RG0}.flavors[0].resources[0].nominalquota": "1"},
        f"{RG0}.flavors[0].resources[0].nominalquota",
        "unknown field",
    ),
    Case(
        "queueingStrategy enum",
        "ClusterQueue",
        {"spec.queueingStrategy": "FIFO"},
        "spec.queueingStrategy",
        "'StrictFIFO' or 'BestEffortFIFO' (got 'FIFO')",
    ),
    Case(
        "stopPolicy enum",
        "LocalQueue",
        {"spec.stopPolicy": "Pause"},
        "spec.stopPolicy",
        "'None', 'Hold' or 'HoldAndDrain'",
    ),
    Case(
        "reclaimWithinCohort enum",
        "ClusterQueue",
        {"spec.preemption.reclaimWithinCohort": "Sometimes"},
        "spec.preemption.reclaimWithinCohort",
        "'Never', 'LowerPriority' or 'Any'",
    ),
    Case(
        "whenCanBorrow enum (v1beta2 has no Borrow)",
        "ClusterQueue",
        {"spec.flavorFungibility.whenCanBorrow": "Borrow"},
        "spec.flavorFungibility.whenCanBorrow",
        "'MayStopSearch' or 'TryNextFlavor'",
    ),
    Case(
        "apiVersion must be a known one",
        "ClusterQueue",
        {"apiVersion": "kuota.dev/v2"},
        "apiVersion",
        "unsupported apiVersion 'kuota.dev/v2'",
    ),
    Case(
        "kind must be known",
        "ClusterQueue",
        {"kind": "ClusterQueues"},
        "kind",
        "unknown kind 'ClusterQueues'",
    ),
    # --- resource groups -------------------------------------------------------------------
    Case(
        "flavor lists fewer resources than covered",
        "ClusterQueue",
        {f"{RG0}.flavors[1].resources": [{"name": "cpu", "nominalQuota": "1"}]},
        f"{RG0}.flavors[1].resources",
        "must list exactly the covered resources cpu, memory in that order (got cpu)",
    ),
    Case(
        "flavor lists covered resources in another order",
        "ClusterQueue",
        {
            f"{RG0}.flavors[1].resources": [
                {"name": "memory", "nominalQuota": "1"},
                {"name": "cpu", "nominalQuota": "1"},
            ]
        },
        f"{RG0}.flavors[1].resources",
        "in that order (got memory, cpu)",
    ),
    Case(
        "flavor lists a resource not covered",
        "ClusterQueue",
        {
            f"{GPU}.flavors[0].resources": [
                {"name": "nvidia.com/gpu", "nominalQuota": "1"},
                {"name": "cpu", "nominalQuota": "1"},
            ]
        },
        f"{GPU}.flavors[0].resources",
        "covered resources nvidia.com/gpu",
    ),
    Case(
        "a resource in two groups",
        "ClusterQueue",
        {f"{GPU}.coveredResources": ["cpu"], f"{GPU}.flavors[0].resources[0].name": "cpu"},
        f"{GPU}.coveredResources[0]",
        "already covered by resourceGroups[0]",
    ),
    Case(
        "a flavor in two groups",
        "ClusterQueue",
        {f"{GPU}.flavors[0].name": "spot"},
        f"{GPU}.flavors[0].name",
        "flavor spot is already listed in resourceGroups[0]",
    ),
    Case(
        "a flavor twice in one group",
        "ClusterQueue",
        {f"{RG0}.flavors[1].name": "on-demand"},
        f"{RG0}.flavors[1].name",
        "flavor on-demand is already listed",
    ),
    Case(
        "coveredResources may not be empty",
        "ClusterQueue",
        {f"{GPU}.coveredResources": []},
        f"{GPU}.coveredResources",
        "at least 1 item",
    ),
    Case(
        "flavors may not be empty",
        "ClusterQueue",
        {f"{GPU}.flavors": []},
        f"{GPU}.flavors",
        "at least 1 item",
    ),
    Case(
        "at most 16 resource groups",
        "ClusterQueue",
        {
            "spec.resourceGroups": [
                {
                    "coveredResources": [f"r{i}"],
                    "flavors": [
                        {"name": f"f{i}", "resources": [{"name": f"r{i}", "nominalQuota": 1}]}
                    ],
                }
                for i in range(17)
            ]
        },
        "spec.resourceGroups",
        "at most 16 items",
    ),
    Case(
        "at most 256 flavors in all groups",
        "ClusterQueue",
        {
            "spec.resourceGroups": [
                {
                    "coveredResources": [f"r{g}"],
                    "flavors": [
                        {"name": f"f{g}-{i}", "resources": [{"name": f"r{g}", "nominalQuota": 1}]}
                        for i in range(64)
                    ],
                }
                for g in range(5)
            ]
        },
        "spec.resourceGroups",
        "lists 320 flavors in total; at most 256",
    ),
    Case(
        "at most 512 flavor-resource combinations per group",
        "ClusterQueue",
        {
            "spec.resourceGroups": [
                {
                    "coveredResources": [f"r{r}" for r in range(9)],
                    "flavors": [
                        {
                            "name": f"f{i}",
                            "resources": [{"name": f"r{r}", "nominalQuota": 1} for r in range(9)],
                        }
                        for i in range(60)
                    ],
                }
            ]
        },
        "spec.resourceGroups[0]",
        "has 540 flavor-resource combinations; at most 512",
    ),
    Case(
        "at most 64 flavors in a group",
        "ClusterQueue",
        {
            f"{GPU}.flavors": [
                {"name": f"f{i}", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1}]}
                for i in range(65)
            ]
        },
        f"{GPU}.flavors",
        "at most 64 items",
    ),
    # --- limits --------------------------------------------------------------------------------
    Case(
        "borrowingLimit needs a cohort",
        "ClusterQueue",
        {"spec.cohortName": DELETE},
        f"{RG0}.flavors[0].resources[0].borrowingLimit",
        "may only be set when spec.cohortName is set",
    ),
    Case(
        "lendingLimit needs a cohort",
        "ClusterQueue",
        {"spec.cohortName": DELETE},
        f"{RG0}.flavors[0].resources[1].lendingLimit",
        "may only be set when spec.cohortName is set",
    ),
    Case(
        "lendingLimit at most nominalQuota",
        "ClusterQueue",
        {f"{RG0}.flavors[0].resources[1].lendingLimit": "40Gi"},
        f"{RG0}.flavors[0].resources[1].lendingLimit",
        "40Gi must not exceed the nominalQuota 36Gi",
    ),
    Case(
        "cohort limits need a parent",
        "Cohort",
        {"spec.parentName": DELETE},
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "may only be set when spec.parentName is set",
    ),
    Case(
        "quota is non-negative",
        "ClusterQueue",
        {f"{RG0}.flavors[0].resources[0].borrowingLimit": "-2"},
        f"{RG0}.flavors[0].resources[0].borrowingLimit",
        "must not be negative",
    ),
    # --- policies -----------------------------------------------------------------------------
    Case(
        "borrowWithinCohort needs reclaimWithinCohort",
        "ClusterQueue",
        {"spec.preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}},
        "spec.preemption.borrowWithinCohort.policy",
        "must be Never while reclaimWithinCohort is Never (got LowerPriority)",
    ),
    Case(
        "preference needs TryNextFlavor for both",
        "ClusterQueue",
        {
            "spec.flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "MayStopSearch",
                "preference": "PreemptionOverBorrowing",
            }
        },
        "spec.flavorFungibility.preference",
        "PreemptionOverBorrowing requires whenCanBorrow and whenCanPreempt to be TryNextFlavor",
    ),
    Case(
        "admission check onFlavors must be the queue's flavors",
        "ClusterQueue",
        {"spec.admissionChecksStrategy.admissionChecks[0].onFlavors": ["a100", "h100"]},
        "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]",
        "flavor h100 is not in this queue's resourceGroups (a100, on-demand, spot)",
    ),
    Case(
        "admission check names are unique",
        "ClusterQueue",
        {"spec.admissionChecksStrategy.admissionChecks": [{"name": "a"}, {"name": "a"}]},
        "spec.admissionChecksStrategy.admissionChecks[1].name",
        "duplicate admission check a",
    ),
    Case(
        "admission checks strategy is not empty",
        "ClusterQueue",
        {"spec.admissionChecksStrategy.admissionChecks": []},
        "spec.admissionChecksStrategy.admissionChecks",
        "at least 1 item",
    ),
    Case(
        "namespaceSelector In needs values",
        "ClusterQueue",
        {"spec.namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}},
        "spec.namespaceSelector.matchExpressions[0].values",
        "must not be empty with operator In",
    ),
    Case(
        "namespaceSelector Exists takes no values",
        "ClusterQueue",
        {
            "spec.namespaceSelector": {
                "matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]
            }
        },
        "spec.namespaceSelector.matchExpressions[0].values",
        "must be empty with operator Exists",
    ),
    Case(
        "namespaceSelector label values are valid",
        "ClusterQueue",
        {"spec.namespaceSelector": {"matchLabels": {"team": "a b"}}},
        "spec.namespaceSelector.matchLabels.team",
        "may hold only letters",
    ),
    Case(
        "cohort may not be its own parent",
        "Cohort",
        {"spec.parentName": "research"},
        "spec.parentName",
        "a Cohort may not be its own parent",
    ),
    # --- resource flavors ----------------------------------------------------------------------
    Case(
        "at most 8 node labels",
        "ResourceFlavor",
        {"spec.nodeLabels": {f"l{i}": "v" for i in range(9)}},
        "spec.nodeLabels",
        "at most 8 items",
    ),
    Case(
        "node label keys are qualified names",
        "ResourceFlavor",
        {"spec.nodeLabels": {"bad key": "v"}},
        "spec.nodeLabels[bad key]",
        "is not a qualified name",
    ),
    Case(
        "node label key prefix must be a subdomain",
        "ResourceFlavor",
        {"spec.nodeLabels": {"Example.com/gpu": "v"}},
        "spec.nodeLabels[Example.com/gpu]",
        "invalid prefix",
    ),
    Case(
        "taint effect enum",
        "ResourceFlavor",
        {"spec.nodeTaints[0].effect": "NoRun"},
        "spec.nodeTaints[0].effect",
        "'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
    ),
    Case(
        "taints unique by key and effect",
        "ResourceFlavor",
        {
            "spec.nodeTaints": [
                {"key": "a", "effect": "NoSchedule"},
                {"key": "a", "value": "x", "effect": "NoSchedule"},
            ]
        },
        "spec.nodeTaints[1]",
        "duplicate taint a:NoSchedule",
    ),
    Case(
        "taint value is a label value",
        "ResourceFlavor",
        {"spec.nodeTaints[0].value": "a b"},
        "spec.nodeTaints[0].value",
        "may hold only letters",
    ),
    Case(
        "toleration without key needs Exists",
        "ResourceFlavor",
        {"spec.tolerations": [{"operator": "Equal", "value": "x"}]},
        "spec.tolerations[0].operator",
        "must be Exists when key is empty",
    ),
    Case(
        "toleration Exists takes no value",
        "ResourceFlavor",
        {"spec.tolerations[0].value": "yes"},
        "spec.tolerations[0].value",
        "must be empty when operator is Exists",
    ),
    Case(
        "tolerationSeconds needs NoExecute",
        "ResourceFlavor",
        {"spec.tolerations[0].tolerationSeconds": 30},
        "spec.tolerations[0].effect",
        "must be NoExecute when tolerationSeconds is set",
    ),
    Case(
        "topologyName needs node labels",
        "ResourceFlavor",
        {"spec.nodeLabels": {}},
        "spec.nodeLabels",
        "at least one node label is required when topologyName is set",
    ),
    # --- topology, priority classes, admission checks -----------------------------------------
    Case(
        "topology levels are unique",
        "Topology",
        {"spec.levels[1].nodeLabel": "cloud.example.com/block"},
        "spec.levels[1].nodeLabel",
        "duplicate level cloud.example.com/block",
    ),
    Case(
        "hostname only as the lowest level",
        "Topology",
        {"spec.levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]},
        "spec.levels[0].nodeLabel",
        "may only be the lowest (last) level",
    ),
    Case(
        "topology needs a level", "Topology", {"spec.levels": []}, "spec.levels", "at least 1 item"
    ),
    Case(
        "priority class value is int32",
        "WorkloadPriorityClass",
        {"value": 2**31},
        "value",
        "less than or equal to 2147483647",
    ),
    Case(
        "priority class value is required",
        "WorkloadPriorityClass",
        {"value": DELETE},
        "value",
        "is required",
    ),
    Case(
        "priority class description is short",
        "WorkloadPriorityClass",
        {"description": "x" * 2049},
        "description",
        "at most 2048 characters",
    ),
    Case(
        "admission check controllerName is required",
        "AdmissionCheck",
        {"spec.controllerName": ""},
        "spec.controllerName",
        "at least 1 character",
    ),
    Case(
        "admission check parameters name is a DNS label",
        "AdmissionCheck",
        {"spec.parameters.name": "a.b"},
        "spec.parameters.name",
        "not a DNS-1123 label",
    ),
    # --- workloads ----------------------------------------------------------------------------
    Case(
        "podSet names are unique",
        "Workload",
        {"spec.podSets[1].name": "driver", "status": {}},
        "spec.podSets[1].name",
        "duplicate podSet name driver",
    ),
    Case(
        "count is not negative",
        "Workload",
        {"spec.podSets[0].count": -1},
        "spec.podSets[0].count",
        "greater than or equal to 0",
    ),
    Case(
        "minCount at least 1",
        "Workload",
        {"spec.podSets[1].minCount": 0},
        "spec.podSets[1].minCount",
        "greater than or equal to 1",
    ),
    Case(
        "minCount at most count",
        "Workload",
        {"spec.podSets[1].minCount": 5},
        "spec.podSets[1].minCount",
        "5 must not exceed count 4",
    ),
    Case(
        "at most one podSet with minCount",
        "Workload",
        {"spec.podSets[0].minCount": 1},
        "spec.podSets",
        "at most one podSet may set minCount",
    ),
    Case(
        "at least one podSet",
        "Workload",
        {"spec.podSets": [], "status": {}},
        "spec.podSets",
        "at least 1 item",
    ),
    Case(
        "at most 18 podSets",
        "Workload",
        {"spec.podSets": [{"name": f"p{i}", "template": {}} for i in range(19)], "status": {}},
        "spec.podSets",
        "at most 18 items",
    ),
    Case(
        "pods resource is reserved",
        "Workload",
        {"spec.podSets[0].template.spec.containers[0].resources.requests.pods": "1"},
        "spec.podSets[0].template.spec.containers[0].resources.requests.pods",
        "'pods' is reserved",
    ),
    Case(
        "maximumExecutionTimeSeconds at least 1",
        "Workload",
        {"spec.maximumExecutionTimeSeconds": 0},
        "spec.maximumExecutionTimeSeconds",
        "greater than or equal to 1",
    ),
    Case(
        "priority is int32",
        "Workload",
        {"spec.priority": -(2**31) - 1},
        "spec.priority",
        "greater than or equal to -2147483648",
    ),
    Case(
        "priorityClassRef kind matches group",
        "Workload",
        {
            "spec.priorityClassRef": {
                "group": "scheduling.k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high",
            }
        },
        "spec.priorityClassRef.kind",
        "must be PriorityClass for group scheduling.k8s.io",
    ),
    Case(
        "quota reservation needs an admission",
        "Workload",
        {"status.admission": DELETE},
        "status.admission",
        "must be set while the QuotaReserved condition is True",
    ),
    Case(
        "one assignment per podSet",
        "Workload",
        {"status.admission.podSetAssignments": [{"name": "driver", "count": 1}]},
        "status.admission.podSetAssignments",
        "must have one entry per podSet (2), got 1",
    ),
    Case(
        "assignment names a podSet",
        "Workload",
        {"status.admission.podSetAssignments[0].name": "launcher"},
        "status.admission.podSetAssignments[0].name",
        "no podSet named launcher",
    ),
    Case(
        "resourceUsage is a multiple of count",
        "Workload",
        {"status.admission.podSetAssignments[1].resourceUsage.cpu": "8001m"},
        "status.admission.podSetAssignments[1].resourceUsage.cpu",
        "8001m is not a multiple of count 4",
    ),
    Case(
        "reclaimable pods name a podSet",
        "Workload",
        {"status.reclaimablePods": [{"name": "ghost", "count": 1}]},
        "status.reclaimablePods[0].name",
        "no podSet named ghost",
    ),
    Case(
        "reclaimable pods at most count",
        "Workload",
        {"status.reclaimablePods": [{"name": "workers", "count": 5}]},
        "status.reclaimablePods[0].count",
        "5 exceeds the podSet's count 4",
    ),
    Case(
        "podSetUpdates name a podSet",
        "Workload",
        {
            "status.admissionChecks": [
                {"name": "mc", "state": "Ready", "podSetUpdates": [{"name": "ghost"}]}
            ]
        },
        "status.admissionChecks[0].podSetUpdates[0].name",
        "no podSet named ghost",
    ),
    Case(
        "admission check state enum",
        "Workload",
        {"status.admissionChecks": [{"name": "mc", "state": "Done"}]},
        "status.admissionChecks[0].state",
        "'Pending', 'Ready', 'Retry' or 'Rejected'",
    ),
    Case(
        "condition status enum",
        "Workload",
        {"status.conditions[0].status": "Yes"},
        "status.conditions[0].status",
        "'True', 'False' or 'Unknown'",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_rejects_with_field_path(case: Case) -> None:
    doc = edit(valid(case.kind), case.changes)
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc, source="bad.yaml")
    problems = info.value.problems
    matching = [p for p in problems if p.field == case.want_field]
    assert matching, f"no problem at {case.want_field}; got {[str(p) for p in problems]}"
    assert any(case.want_message in p.message for p in matching), [str(p) for p in matching]
    assert all(p.source == "bad.yaml" for p in problems)


def test_problem_line_names_file_kind_object_and_field() -> None:
    doc = edit(
        valid("ClusterQueue"),
        {f"{RG0}.flavors[1].resources": [{"name": "cpu", "nominalQuota": "1"}]},
    )
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc, source="examples/x.yaml")
    assert str(info.value) == (
        "examples/x.yaml: ClusterQueue team-a: spec.resourceGroups[0].flavors[1].resources: "
        "must list exactly the covered resources cpu, memory in that order (got cpu)"
    )


def test_all_rule_violations_are_reported_together() -> None:
    doc = edit(
        valid("ClusterQueue"),
        {
            "spec.cohortName": DELETE,
            f"{RG0}.flavors[1].name": "on-demand",
            "spec.preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}},
            "spec.flavorFungibility": {"preference": "BorrowingOverPreemption"},
        },
    )
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc)
    fields = {p.field for p in info.value.problems}
    assert fields == {
        f"{RG0}.flavors[0].resources[0].borrowingLimit",
        f"{RG0}.flavors[0].resources[1].lendingLimit",
        f"{RG0}.flavors[1].name",
        "spec.preemption.borrowWithinCohort.policy",
        "spec.flavorFungibility.preference",
    }


def test_a_bad_item_does_not_also_report_its_list_as_too_short() -> None:
    doc = edit(valid("ClusterQueue"), {f"{GPU}.flavors[0].resources[0].nominalQuota": "x"})
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc)
    assert [p.field for p in info.value.problems] == [f"{GPU}.flavors[0].resources[0].nominalQuota"]


CROSS_OBJECT_REFERENCES = [
    ("ClusterQueue", {f"{RG0}.flavors[1].name": "missing-flavor"}),
    ("ClusterQueue", {"spec.cohortName": "no-such-cohort"}),
    ("LocalQueue", {"spec.clusterQueue": "no-such-queue"}),
    ("Cohort", {"spec.parentName": "no-such-parent"}),
    ("Workload", {"spec.queueName": "no-such-queue"}),
    ("ResourceFlavor", {"spec.topologyName": "no-such-topology"}),
]


@pytest.mark.parametrize(("kind", "changes"), CROSS_OBJECT_REFERENCES)
def test_references_to_other_objects_are_not_checked_at_parse_time(
    kind: str, changes: dict[str, Any]
) -> None:
    # Kueue marks such objects inactive instead of rejecting them; the core does the same.
    api.parse_object(edit(valid(kind), changes))
