"""Kueue manifests (v1beta1 and v1beta2) are read and converted to kuota's API."""

from __future__ import annotations

from typing import Any

import pytest
from api_builders import valid

from quota import api

# A single ClusterQueue serving every namespace, in the shape of Kueue's setup sample.
SINGLE_CLUSTERQUEUE_V1BETA1 = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cluster-queue
spec:
  namespaceSelector: {}   # every namespace
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 9
      - name: memory
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: default
  name: user-queue
spec:
  clusterQueue: cluster-queue
"""

# Two teams sharing a cohort, one lending only part of its quota, under a parent cohort.
COHORTS_V1BETA1 = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: company}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: research}
spec:
  parentName: company
  fairSharing: {weight: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  cohort: research
  namespaceSelector: {matchLabels: {team: a}}
  queueingStrategy: StrictFIFO
  flavorFungibility: {whenCanBorrow: Borrow, whenCanPreempt: Preempt}
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
    withinClusterQueue: LowerPriority
  admissionChecks: [provisioning, multikueue]
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9, borrowingLimit: 6}
      - {name: memory, nominalQuota: 36Gi, lendingLimit: 12Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-b-cq}
spec:
  cohort: research
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 12}
      - {name: memory, nominalQuota: 48Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: sample-priority}
value: 10000
description: Sample priority
"""

WORKLOAD_V1BETA1 = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: job-sample, namespace: team-a}
spec:
  queueName: user-queue
  priorityClassName: sample-priority
  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass
  priority: 10000
  podSets:
  - name: main
    count: 3
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: sleep
          image: busybox
          resources: {requests: {cpu: "1", memory: 200Mi}}
status:
  accumulatedPastExexcutionTimeSeconds: 42
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: ok,
     lastTransitionTime: "2024-05-01T10:00:00Z"}
  admission:
    clusterQueue: cluster-queue
    podSetAssignments:
    - name: main
      count: 3
      flavors: {cpu: default-flavor, memory: default-flavor}
      resourceUsage: {cpu: "3", memory: 600Mi}
      topologyAssignment:
        levels: [cloud.example.com/rack, kubernetes.io/hostname]
        domains:
        - {values: [rack-1, node-1], count: 2}
        - {values: [rack-1, node-2], count: 1}
"""


def test_single_clusterqueue_setup_converts() -> None:
    flavor, cq, lq = api.load_objects(SINGLE_CLUSTERQUEUE_V1BETA1)
    assert isinstance(flavor, api.ResourceFlavor) and flavor.name == "default-flavor"
    assert isinstance(cq, api.ClusterQueue) and isinstance(lq, api.LocalQueue)
    assert cq.api_version == lq.api_version == "kuota.dev/v1alpha1"
    assert cq.spec.namespace_selector == api.LabelSelector()
    assert cq.spec.namespace_selector.matches({"anything": "at-all"})
    assert [(r.name, r.nominal_quota) for r in cq.spec.resource_groups[0].flavors[0].resources] == [
        ("cpu", "9"),
        ("memory", "36Gi"),
    ]
    assert (lq.key, lq.spec.cluster_queue) == ("default/user-queue", "cluster-queue")


def test_cohort_examples_convert_with_v1beta1_renames() -> None:
    objects = {o.name: o for o in api.load_objects(COHORTS_V1BETA1)}
    company, research = objects["company"], objects["research"]
    team_a, team_b = objects["team-a-cq"], objects["team-b-cq"]
    assert isinstance(company, api.Cohort) and isinstance(research, api.Cohort)
    assert research.spec.parent_name == "company" and research.spec.fair_sharing.weight == "2"
    assert isinstance(team_a, api.ClusterQueue) and isinstance(team_b, api.ClusterQueue)
    assert team_a.spec.cohort_name == team_b.spec.cohort_name == "research"
    assert team_a.spec.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert team_a.spec.flavor_fungibility.when_can_preempt == "MayStopSearch"
    assert team_a.spec.admission_checks == ("provisioning", "multikueue")
    assert team_a.spec.checks_for_flavors(["default-flavor"]) == ("provisioning", "multikueue")
    assert team_a.spec.preemption.borrow_within_cohort.max_priority_threshold == 100
    assert team_a.spec.namespace_selector is not None
    assert team_a.spec.namespace_selector.matches({"team": "a"})
    assert not team_a.spec.namespace_selector.matches({"team": "b"})
    wpc = objects["sample-priority"]
    assert isinstance(wpc, api.WorkloadPriorityClass) and wpc.value == 10000


def test_workload_v1beta1_converts_priority_class_status_and_topology() -> None:
    (wl,) = api.load_objects(WORKLOAD_V1BETA1)
    assert isinstance(wl, api.Workload)
    assert wl.spec.priority_class_ref == api.PriorityClassRef.workload("sample-priority")
    assert wl.spec.priority == 10000
    assert wl.status.accumulated_past_execution_time_seconds == 42
    assert wl.has_quota_reservation
    (assignment,) = wl.status.admission.pod_set_assignments  # type: ignore[union-attr]
    assert assignment.topology_assignment is not None
    assert list(assignment.topology_assignment.domains()) == [
        (("rack-1", "node-1"), 2),
        (("rack-1", "node-2"), 1),
    ]
    assert wl.spec.pod_sets[0].pod_requests() == {"cpu": 1000, "memory": 200 * 2**20 * 1000}


@pytest.mark.parametrize(
    ("source", "want_ref"),
    [
        ("kueue.x-k8s.io/workloadpriorityclass", api.PriorityClassRef.workload("p")),
        ("scheduling.k8s.io/priorityclass", api.PriorityClassRef.pod("p")),
        ("", api.PriorityClassRef.workload("p")),
    ],
)
def test_v1beta1_priority_class_source(source: str, want_ref: api.PriorityClassRef) -> None:
    doc = _v1beta1(valid("Workload"))
    doc["spec"].update(priorityClassName="p", priorityClassSource=source)
    wl = api.parse_object(doc)
    assert isinstance(wl, api.Workload)
    assert wl.spec.priority_class_ref == want_ref


def test_v1beta2_manifest_converts_by_changing_api_version() -> None:
    for kind in (
        "ClusterQueue",
        "Cohort",
        "LocalQueue",
        "ResourceFlavor",
        "Topology",
        "WorkloadPriorityClass",
        "AdmissionCheck",
    ):
        native = api.parse_object(valid(kind))
        kueue = api.parse_object({**valid(kind), "apiVersion": "kueue.x-k8s.io/v1beta2"})
        assert kueue == native, kind


def test_v1beta2_workload_priority_class_group_converts() -> None:
    doc = {**valid("Workload"), "apiVersion": "kueue.x-k8s.io/v1beta2"}
    doc["spec"] = {
        **doc["spec"],
        "priorityClassRef": {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high",
        },
    }
    wl = api.parse_object(doc)
    assert isinstance(wl, api.Workload)
    assert wl.spec.priority_class_ref == api.PriorityClassRef.workload("high")


def test_v1beta1_local_queue_status_flavor_usage_is_renamed() -> None:
    doc = _v1beta1(valid("LocalQueue"))
    doc["status"] = {
        "pendingWorkloads": 2,
        "flavorUsage": [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "3"}]}],
        "flavors": [{"name": "default-flavor"}],
    }
    lq = api.parse_object(doc)
    assert isinstance(lq, api.LocalQueue)
    assert lq.status.pending_workloads == 2
    assert lq.status.flavors_usage[0].resources[0].total == "3"


def test_v1beta2_rejects_v1beta1_only_fields() -> None:
    doc = {**valid("ClusterQueue"), "apiVersion": "kueue.x-k8s.io/v1beta2"}
    doc["spec"] = {**doc["spec"], "cohort": "research"}
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc)
    assert [(p.field, p.message.split(" (")[0]) for p in info.value.problems] == [
        ("spec.cohort", "unknown field")
    ]


CONFLICTS = [
    (
        "ClusterQueue",
        {"cohort": "a", "cohortName": "b"},
        "spec.cohort",
        "conflicts with spec.cohortName",
    ),
    (
        "ClusterQueue",
        {"admissionChecks": ["x"], "admissionChecksStrategy": {"admissionChecks": [{"name": "y"}]}},
        "spec.admissionChecks",
        "not both",
    ),
    ("ClusterQueue", {"admissionChecks": "x"}, "spec.admissionChecks", "must be a list"),
    (
        "Workload",
        {"priorityClassName": "p", "priorityClassSource": "elsewhere"},
        "spec.priorityClassSource",
        "got 'elsewhere'",
    ),
]


@pytest.mark.parametrize(("kind", "spec", "want_field", "want_message"), CONFLICTS)
def test_v1beta1_conflicts_are_problems(
    kind: str, spec: dict[str, Any], want_field: str, want_message: str
) -> None:
    doc = _v1beta1(valid(kind))
    doc["spec"].update(spec)
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc, source="k.yaml")
    (problem,) = info.value.problems
    assert problem.field == want_field and want_message in problem.message


def test_same_cohort_under_both_spellings_is_fine() -> None:
    doc = _v1beta1(valid("ClusterQueue"))
    doc["spec"].update(cohort="research")
    cq = api.parse_object(doc)
    assert isinstance(cq, api.ClusterQueue) and cq.spec.cohort_name == "research"


def test_conversion_does_not_change_its_input() -> None:
    doc = _v1beta1(valid("ClusterQueue"))
    doc["spec"]["cohort"] = doc["spec"].pop("cohortName")
    before = repr(doc)
    api.parse_object(doc)
    assert repr(doc) == before


def _v1beta1(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "apiVersion": "kueue.x-k8s.io/v1beta1", "spec": dict(doc["spec"])}
