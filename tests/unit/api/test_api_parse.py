"""Valid objects of every kind parse, get Kueue's defaults, and survive a round trip."""

from __future__ import annotations

from typing import Any

import pytest
from api_builders import edit, kinds, valid

from quota import api


@pytest.mark.parametrize("kind", kinds())
def test_every_kind_parses_and_round_trips(kind: str) -> None:
    obj = api.parse_object(valid(kind), source="t.yaml")
    assert type(obj) is api.KINDS[kind]
    again = api.parse_object(obj.to_dict(), source="t.yaml")
    assert again == obj


MINIMAL: dict[str, dict[str, Any]] = {
    "ClusterQueue": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
    },
    "Cohort": {"apiVersion": "kuota.dev/v1alpha1", "kind": "Cohort", "metadata": {"name": "co"}},
    "LocalQueue": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "LocalQueue",
        "metadata": {"name": "lq"},
        "spec": {"clusterQueue": "cq"},
    },
    "Workload": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "wl"},
        "spec": {"podSets": [{"template": {"spec": {"containers": [{"name": "c"}]}}}]},
    },
    "ResourceFlavor": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "default"},
    },
}

DEFAULTS = [
    # (kind, attribute path on the parsed object, want)
    ("ClusterQueue", "spec.queueing_strategy", "BestEffortFIFO"),
    ("ClusterQueue", "spec.namespace_selector", None),
    ("ClusterQueue", "spec.cohort_name", None),
    ("ClusterQueue", "spec.resource_groups", ()),
    ("ClusterQueue", "spec.flavor_fungibility.when_can_borrow", "MayStopSearch"),
    ("ClusterQueue", "spec.flavor_fungibility.when_can_preempt", "TryNextFlavor"),
    ("ClusterQueue", "spec.flavor_fungibility.preference", None),
    ("ClusterQueue", "spec.preemption.reclaim_within_cohort", "Never"),
    ("ClusterQueue", "spec.preemption.within_cluster_queue", "Never"),
    ("ClusterQueue", "spec.preemption.borrow_within_cohort.policy", "Never"),
    ("ClusterQueue", "spec.preemption.borrow_within_cohort.max_priority_threshold", None),
    ("ClusterQueue", "spec.stop_policy", "None"),
    ("ClusterQueue", "spec.fair_sharing.weight", "1"),
    ("ClusterQueue", "spec.admission_checks", ()),
    ("ClusterQueue", "status.pending_workloads", 0),
    ("ClusterQueue", "status.conditions", ()),
    ("Cohort", "spec.parent_name", None),
    ("Cohort", "spec.fair_sharing.weight", "1"),
    ("LocalQueue", "spec.stop_policy", "None"),
    ("LocalQueue", "metadata.namespace", "default"),
    ("LocalQueue", "key", "default/lq"),
    ("Workload", "spec.pod_sets[0].name", "main"),
    ("Workload", "spec.pod_sets[0].count", 1),
    ("Workload", "spec.pod_sets[0].min_count", None),
    ("Workload", "spec.active", True),
    ("Workload", "spec.priority", None),
    ("Workload", "spec.priority_class_name", None),
    ("Workload", "spec.priority_class_source", ""),
    ("Workload", "status.admission", None),
    ("Workload", "has_quota_reservation", False),
    ("ResourceFlavor", "spec.node_labels", {}),
    ("ResourceFlavor", "spec.node_taints", ()),
    ("ResourceFlavor", "key", "default"),
]


def _get(obj: Any, path: str) -> Any:
    for part in path.replace("]", "").split("."):
        name, _, index = part.partition("[")
        obj = getattr(obj, name)
        if index:
            obj = obj[int(index)]
    return obj


@pytest.mark.parametrize(("kind", "path", "want"), DEFAULTS)
def test_defaults_match_kueue(kind: str, path: str, want: Any) -> None:
    obj = api.parse_object(MINIMAL[kind], source="t.yaml")
    assert _get(obj, path) == want


def test_quantities_keep_their_spelling_and_parse_to_milli_units() -> None:
    cq = api.parse_object(valid("ClusterQueue"))
    assert isinstance(cq, api.ClusterQueue)
    cpu, memory = cq.spec.resource_groups[0].flavors[0].resources
    assert (cpu.nominal_quota, cpu.borrowing_limit, memory.lending_limit) == ("9", "6", "12Gi")
    assert api.amount(memory.nominal_quota) == 36 * 2**30 * 1000
    assert cq.to_dict()["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1] == {
        "name": "memory",
        "nominalQuota": "36Gi",
        "lendingLimit": "12Gi",
    }


@pytest.mark.parametrize(
    ("value", "want_amount"),
    [
        ("500m", 500),
        (2, 2000),
        (0.5, 500),
        ("1Ki", 1024 * 1000),
        ("1e3", 1_000_000),
        ("0", 0),
    ],
)
def test_quantity_accepts_kubernetes_spellings(value: object, want_amount: int) -> None:
    doc = edit(
        valid("ClusterQueue"),
        {"spec.resourceGroups[1].flavors[0].resources[0].nominalQuota": value},
    )
    cq = api.parse_object(doc)
    assert isinstance(cq, api.ClusterQueue)
    assert (
        api.amount(cq.spec.resource_groups[1].flavors[0].resources[0].nominal_quota) == want_amount
    )


@pytest.mark.parametrize(
    ("value", "want_message"),
    [
        ("lots", "'lots' is not a quantity"),
        ("-1", "'-1' must not be negative"),
        (True, "True is not a quantity"),
        ([1], "[1] is not a quantity"),
    ],
)
def test_bad_quantity_names_the_value_and_field(value: object, want_message: str) -> None:
    doc = edit(
        valid("ClusterQueue"),
        {"spec.resourceGroups[1].flavors[0].resources[0].nominalQuota": value},
    )
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(doc, source="q.yaml")
    (problem,) = info.value.problems
    assert problem.field == "spec.resourceGroups[1].flavors[0].resources[0].nominalQuota"
    assert want_message in problem.message


def test_objects_are_frozen_and_lists_are_tuples() -> None:
    cq = api.parse_object(valid("ClusterQueue"))
    assert isinstance(cq, api.ClusterQueue)
    with pytest.raises(ValueError, match="frozen"):
        cq.spec.cohort_name = "other"  # type: ignore[misc]
    assert isinstance(cq.spec.resource_groups, tuple)
    assert isinstance(cq.spec.resource_groups[0].covered_resources, tuple)


def test_objects_built_in_code_get_the_same_defaults_and_checks() -> None:
    cq = api.ClusterQueue(
        metadata=api.ObjectMeta(name="cq"),
        spec=api.ClusterQueueSpec(
            resource_groups=[
                api.ResourceGroup(
                    covered_resources=["cpu"],
                    flavors=[
                        api.FlavorQuotas(
                            name="default",
                            resources=[api.ResourceQuota(name="cpu", nominal_quota="4")],
                        )
                    ],
                )
            ]
        ),
    )
    assert cq.spec.preemption.reclaim_within_cohort == "Never"
    assert cq.to_dict()["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
        }
    ]
    with pytest.raises(ValueError, match=r"may only be set when spec\.cohortName is set"):
        api.ClusterQueueSpec(
            resource_groups=[
                api.ResourceGroup(
                    covered_resources=["cpu"],
                    flavors=[
                        api.FlavorQuotas(
                            name="default",
                            resources=[
                                api.ResourceQuota(
                                    name="cpu", nominal_quota="4", borrowing_limit="1"
                                )
                            ],
                        )
                    ],
                )
            ]
        )


def test_to_dict_omits_empty_defaults_but_keeps_meaningful_empty_selector() -> None:
    everyone = api.parse_object(edit(MINIMAL["ClusterQueue"], {"spec.namespaceSelector": {}}))
    nobody = api.parse_object(MINIMAL["ClusterQueue"])
    assert everyone.to_dict()["spec"]["namespaceSelector"] == {}
    assert "namespaceSelector" not in nobody.to_dict()["spec"]
    assert everyone.to_dict()["metadata"] == {"name": "cq"}


def test_admission_check_helpers_read_the_strategy() -> None:
    cq = api.parse_object(
        edit(
            valid("ClusterQueue"),
            {
                "spec.admissionChecksStrategy.admissionChecks": [
                    {"name": "multicluster", "onFlavors": ["a100"]},
                    {"name": "budget"},
                ]
            },
        )
    )
    assert isinstance(cq, api.ClusterQueue)
    assert cq.spec.admission_checks == ("multicluster", "budget")
    assert cq.spec.checks_for_flavors(["on-demand"]) == ("budget",)
    assert cq.spec.checks_for_flavors(["on-demand", "a100"]) == ("multicluster", "budget")
    assert cq.spec.flavor_names() == ("on-demand", "spot", "a100")


def test_workload_helpers() -> None:
    wl = api.parse_object(
        edit(
            valid("Workload"),
            {
                "spec.priorityClassRef": {
                    "group": "kuota.dev",
                    "kind": "WorkloadPriorityClass",
                    "name": "high",
                }
            },
        )
    )
    assert isinstance(wl, api.Workload)
    assert wl.key == "team-a/train-1"
    assert wl.has_quota_reservation and not wl.is_admitted and not wl.is_finished
    assert wl.spec.priority_class_name == "high"
    assert wl.spec.priority_class_source == "kuota.dev/workloadpriorityclass"
    assert wl.spec.pod_set("workers") is wl.spec.pod_sets[1]
    assert wl.spec.pod_set("nope") is None
    assert wl.with_status(api.WorkloadStatus()).status.admission is None


def test_topology_assignment_round_trips_domains() -> None:
    domains = [(("b1", "r1"), 3), (("b1", "r2"), 1)]
    assignment = api.TopologyAssignment.from_domains(["block", "rack"], domains)
    assert list(assignment.domains()) == domains
    universal = api.TopologyAssignment.model_validate(
        {
            "levels": ["rack"],
            "slices": [
                {
                    "domainCount": 2,
                    "valuesPerLevel": [{"individual": {"prefix": "rack-", "roots": ["1", "2"]}}],
                    "podCounts": {"universal": 4},
                }
            ],
        }
    )
    assert list(universal.domains()) == [(("rack-1",), 4), (("rack-2",), 4)]
