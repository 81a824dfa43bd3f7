"""Flavor assignment: constraints, quota modes, fungibility, gang accumulation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from admission import flavors as fa
from quota.api import Taint, Toleration
from quota.cache import QuotaCache
from quota.config import ClusterQueueConfig, FlavorConfig
from quota.resources import FlavorResource
from quota.workload import Admission, NodeRequirement, PodSetInfo, WorkloadInfo
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, amount, flavor


@dataclass
class Case:
    name: str
    cq: ClusterQueueConfig
    wl: WorkloadInfo
    flavors: list[FlavorConfig] = field(default_factory=lambda: [flavor("a"), flavor("b")])
    others: list[ClusterQueueConfig] = field(default_factory=list)
    usage: dict[str, dict[tuple[str, str], Any]] = field(default_factory=dict)
    want_mode: fa.Mode = fa.Mode.FIT
    want_flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    want_borrow: int = 0
    want_reason: str = ""
    want_message: str = ""


def two_flavor_cq(**fields: Any) -> ClusterQueueBuilder:
    return (ClusterQueueBuilder("cq").cohort("co")
            .flavor("a", {"cpu": 4}).flavor("b", {"cpu": 8}, group=0).set(**fields))


def lender() -> ClusterQueueConfig:
    return ClusterQueueBuilder("lender").cohort("co").flavor("a", {"cpu": 10}) \
        .flavor("b", {"cpu": 10}, group=0).obj()


SPOT = flavor("a", node_labels={"spot": "true"},
              node_taints=(Taint(key="spot", value="true", effect="NoSchedule"),))

CASES = [
    Case("first flavor fits", two_flavor_cq().obj(), WorkloadBuilder("w").pod_set(cpu=2).obj(),
         want_flavors={"main": {"cpu": "a"}}),
    Case("second flavor when the first is too small", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(count=6, cpu=1).obj(), want_flavors={"main": {"cpu": "b"}}),
    Case("MayStopSearch borrows in the first flavor", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(count=6, cpu=1).obj(), others=[lender()],
         want_flavors={"main": {"cpu": "a"}}, want_borrow=1),
    Case("TryNextFlavor prefers a flavor without borrowing",
         two_flavor_cq(when_can_borrow="TryNextFlavor").obj(),
         WorkloadBuilder("w").pod_set(count=6, cpu=1).obj(), others=[lender()],
         want_flavors={"main": {"cpu": "b"}}),
    Case("TryNextFlavor keeps the least borrowing when all borrow",
         two_flavor_cq(when_can_borrow="TryNextFlavor").obj(),
         WorkloadBuilder("w").pod_set(count=12, cpu=1).obj(), others=[lender()],
         want_flavors={"main": {"cpu": "a"}}, want_borrow=1),
    Case("quota in use makes the workload wait", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(count=3, cpu=1).obj(),
         usage={"cq": {("a", "cpu"): 2, ("b", "cpu"): 6}},
         want_mode=fa.Mode.NO_FIT, want_reason="WaitingForQuota"),
    Case("more than the queue could ever get", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(count=9, cpu=1).obj(),
         want_mode=fa.Mode.NO_FIT, want_reason="ExceedsMaxQuota",
         want_message="cpu in flavor b: request 9 exceeds the most ClusterQueue cq can ever get "
                      "(8) by 1"),
    Case("untolerated taint skips the flavor", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1).obj(), flavors=[SPOT, flavor("b")],
         want_flavors={"main": {"cpu": "b"}}),
    Case("tolerated taint keeps the flavor", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1, tolerations=(
             Toleration(key="spot", operator="Exists"),)).obj(),
         flavors=[SPOT, flavor("b")], want_flavors={"main": {"cpu": "a"}}),
    Case("the flavor's own tolerations count", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1).obj(),
         flavors=[flavor("a", node_taints=SPOT.node_taints,
                         tolerations=(Toleration(key="spot", operator="Exists"),)), flavor("b")],
         want_flavors={"main": {"cpu": "a"}}),
    Case("nodeSelector mismatch on a flavor label key", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1, node_selector={"zone": "b"}).obj(),
         flavors=[flavor("a", node_labels={"zone": "a"}), flavor("b", node_labels={"zone": "b"})],
         want_flavors={"main": {"cpu": "b"}}),
    Case("a selector key only another flavor defines does not exclude this one",
         two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1, node_selector={"gpu": "h100"}).obj(),
         flavors=[flavor("a", node_labels={"zone": "a"}), flavor("b", node_labels={"gpu": "a100"})],
         want_flavors={"main": {"cpu": "a"}}),
    Case("an affinity term on another flavor's key alone matches any node of this one",
         two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1, affinity=((("gpu", "In", ("h100",)),),)).obj(),
         flavors=[flavor("a", node_labels={"zone": "a"}), flavor("b", node_labels={"gpu": "a100"})],
         want_flavors={"main": {"cpu": "a"}}),
    Case("no flavor matches", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1, node_selector={"zone": "c"}).obj(),
         flavors=[flavor("a", node_labels={"zone": "a"}), flavor("b", node_labels={"zone": "b"})],
         want_mode=fa.Mode.NO_FIT, want_reason="NoMatchingFlavor"),
    Case("resource not covered", two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set(cpu=1, memory="1Gi").obj(),
         want_mode=fa.Mode.NO_FIT, want_reason="NoMatchingFlavor",
         want_message="resource memory is not covered"),
    Case("a pods quota charges one per pod",
         ClusterQueueBuilder("cq").flavor("a", {"cpu": 10, "pods": 3}).obj(),
         WorkloadBuilder("w").pod_set(count=3, cpu=1).obj(),
         want_flavors={"main": {"cpu": "a", "pods": "a"}}),
    Case("more pods than the pods quota is refused",
         ClusterQueueBuilder("cq").flavor("a", {"cpu": 10, "pods": 2}).obj(),
         WorkloadBuilder("w").pod_set(count=3, cpu=1).obj(),
         want_mode=fa.Mode.NO_FIT, want_reason="ExceedsMaxQuota",
         want_message="pods in flavor a: request 3 exceeds"),
    Case("a covered resource requested at zero still gets its flavor",
         ClusterQueueBuilder("cq").flavor("a", {"cpu": 10}).flavor("b", {"memory": "1Gi"}).obj(),
         WorkloadBuilder("w").pod_set(cpu=1, memory=0).obj(),
         want_flavors={"main": {"cpu": "a", "memory": "b"}}),
    Case("an uncovered resource requested at zero is ignored",
         two_flavor_cq().obj(), WorkloadBuilder("w").pod_set(cpu=1, memory=0).obj(),
         want_flavors={"main": {"cpu": "a"}}),
    Case("pod sets accumulate: the second set sees the first one's usage",
         two_flavor_cq().obj(),
         WorkloadBuilder("w").pod_set("driver", count=3, cpu=1).pod_set("workers", count=3,
                                                                         cpu=1).obj(),
         want_flavors={"driver": {"cpu": "a"}, "workers": {"cpu": "b"}}),
]


def snapshot_for(case: Case) -> Any:
    cache = QuotaCache()
    for f in case.flavors:
        cache.flavors[f.name] = f
    for cq in [case.cq, *case.others]:
        cache.cluster_queues[cq.name] = cq
    cache.rebuild()
    for cq, cells in case.usage.items():
        for (fl, res), value in cells.items():
            cache.tree.add(cq, {FlavorResource(fl, res): amount(value)})
    return cache.snapshot()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_assign(case: Case) -> None:
    result = fa.assign(case.wl, case.cq, snapshot_for(case))
    assert result.mode is case.want_mode, result.message
    if case.want_mode is fa.Mode.FIT:
        got = {ps.name: dict(ps.flavors) for ps in result.pod_sets}
        assert got == case.want_flavors
        assert result.borrow == case.want_borrow
        # Every charged resource has a flavor, so the admission can be built and accounted.
        Admission("cq", tuple(result.pod_sets)).usage()
    else:
        assert result.reason == case.want_reason
        assert case.want_message in result.message


@pytest.mark.parametrize(("requirement", "labels", "want"), [
    (NodeRequirement("zone", "In", ("a", "b")), {"zone": "a"}, True),
    (NodeRequirement("zone", "In", ("a",)), {}, False),
    (NodeRequirement("zone", "NotIn", ("a",)), {}, True),
    (NodeRequirement("zone", "Exists"), {"zone": "x"}, True),
    (NodeRequirement("zone", "DoesNotExist"), {"zone": "x"}, False),
    (NodeRequirement("gen", "Gt", ("3",)), {"gen": "4"}, True),
    (NodeRequirement("gen", "Lt", ("3",)), {"gen": "four"}, False),
])
def test_node_requirement(requirement: NodeRequirement, labels: dict[str, str],
                          want: bool) -> None:
    assert requirement.matches(labels) is want


def test_required_affinity_on_flavor_keys() -> None:
    cq = two_flavor_cq().obj()
    ps = PodSetInfo("main", 1, {"cpu": 1000}, affinity_terms=(
        (NodeRequirement("zone", "In", ("b",)),),))
    wl = WorkloadInfo("ns", "w", "lq", (ps,))
    case = Case("", cq, wl, flavors=[flavor("a", node_labels={"zone": "a"}),
                                     flavor("b", node_labels={"zone": "b"})])
    result = fa.assign(wl, cq, snapshot_for(case))
    assert result.pod_sets[0].flavors == {"cpu": "b"}
