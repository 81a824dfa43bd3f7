"""Each filter plugin: which members it refuses, and the reason it gives."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from multicluster_builders import (
    GPU,
    MODEL,
    NOW,
    gpu_member,
    gpu_nodes,
    member,
    node,
    pod_set,
    request,
    taint,
    workload,
)

from multicluster import filters
from multicluster.framework import FilterPlugin
from multicluster.hints import NO_HINTS, Hints, parse_selector
from multicluster.model import ClusterInfo
from quota.api.meta import Toleration
from quota.workload import WorkloadInfo


@dataclass(frozen=True)
class Case:
    name: str
    plugin: FilterPlugin
    cluster: ClusterInfo
    wl: WorkloadInfo = field(default_factory=workload)
    flavor: str = "a100"
    hints: Hints = NO_HINTS
    want_ok: bool = True
    want_reason: str = ""


def selector(text: str) -> Hints:
    return Hints(parse_selector(text), text)


EU = {"topology.kubernetes.io/region": "eu", "tier": "gold"}
TOLERATES_SPOT = (Toleration(key="spot", operator="Exists"),)

CASES = [
    # --- Health --------------------------------------------------------------------------
    Case("active and fresh", filters.Health(), gpu_member("a", last_seen=NOW - 59)),
    Case("inactive", filters.Health(), gpu_member("a", active=False, reason="Unreachable"),
         want_ok=False, want_reason="member is not active (Unreachable)"),
    Case("never seen", filters.Health(), gpu_member("a", last_seen=None), want_ok=False,
         want_reason="never been seen"),
    Case("stale", filters.Health(), gpu_member("a", last_seen=NOW - 95), want_ok=False,
         want_reason="last seen 95s ago (staleAfter is 60s)"),
    # --- ClusterAffinity ------------------------------------------------------------------
    Case("no selector", filters.ClusterAffinity(), gpu_member("a")),
    Case("selector matches", filters.ClusterAffinity(), gpu_member("a", labels=EU),
         hints=selector("topology.kubernetes.io/region in (eu, us), tier=gold")),
    Case("selector value differs", filters.ClusterAffinity(), gpu_member("a", labels=EU),
         hints=selector("tier=silver"), want_ok=False,
         want_reason="kuota.dev/cluster-selector requires tier=silver; member has tier=gold"),
    Case("selector label missing", filters.ClusterAffinity(), gpu_member("a", labels=EU),
         hints=selector("nvlink"), want_ok=False,
         want_reason="requires nvlink; member has no label nvlink"),
    Case("selector excludes", filters.ClusterAffinity(), gpu_member("a", labels=EU),
         hints=selector("!tier"), want_ok=False, want_reason="requires !tier"),
    # --- TaintToleration ------------------------------------------------------------------
    Case("no taints", filters.TaintToleration(), gpu_member("a")),
    Case("untolerated NoSchedule", filters.TaintToleration(),
         gpu_member("a", taints=(taint("spot", value="true"),)), want_ok=False,
         want_reason="member taint spot=true:NoSchedule is not tolerated by podSet main"),
    Case("untolerated NoExecute", filters.TaintToleration(),
         gpu_member("a", taints=(taint("maintenance", "NoExecute"),)), want_ok=False,
         want_reason="maintenance:NoExecute"),
    Case("PreferNoSchedule never filters", filters.TaintToleration(),
         gpu_member("a", taints=(taint("busy", "PreferNoSchedule"),))),
    Case("tolerated by the pods", filters.TaintToleration(),
         gpu_member("a", taints=(taint("spot", value="true"),)),
         wl=workload(pod_set(tolerations=TOLERATES_SPOT))),
    Case("tolerated by the flavor", filters.TaintToleration(),
         member("a", (node("n", labels={"lifecycle": "spot"}),),
                taints=(taint("spot", value="true"),)),
         wl=workload(pod_set(requests="cpu=1")), flavor="spot"),
    Case("every podSet must tolerate", filters.TaintToleration(),
         gpu_member("a", taints=(taint("spot"),)),
         wl=workload(pod_set("launcher", tolerations=TOLERATES_SPOT), pod_set("worker")),
         want_ok=False, want_reason="not tolerated by podSet worker"),
    # --- DataLocality (required) ----------------------------------------------------------
    Case("no required data", filters.DataLocality(), gpu_member("a")),
    Case("holds the data", filters.DataLocality(),
         gpu_member("a", datasets=("imagenet", "coco")),
         hints=Hints(required_datasets=("imagenet", "coco"))),
    Case("preferred data is not required", filters.DataLocality(), gpu_member("a"),
         hints=Hints(preferred_datasets=("laion",))),
    Case("misses data", filters.DataLocality(), gpu_member("a", datasets=("imagenet",)),
         hints=Hints(required_datasets=("imagenet", "coco", "laion")), want_ok=False,
         want_reason="kuota.dev/datasets requires coco, laion, which the member does not hold"),
    # --- Hardware --------------------------------------------------------------------------
    Case("has the flavor's nodes", filters.Hardware(), gpu_member("a", model="a100")),
    Case("has other GPUs only", filters.Hardware(), gpu_member("a", model="t4"),
         want_ok=False,
         want_reason=f"no node has the labels of flavor a100 ({MODEL}=a100) needed by "
                     "podSet main"),
    Case("full nodes still count as hardware", filters.Hardware(),
         gpu_member("a", free_gpus=(0, 0))),
    Case("flavor without labels", filters.Hardware(), member("a", (node("n"),)),
         wl=workload(pod_set(requests="cpu=1")), flavor="default"),
    # --- CapacityEstimate ------------------------------------------------------------------
    Case("fits", filters.CapacityEstimate(), gpu_member("a", (8, 8)),
         wl=workload(pod_set(count=2, requests=f"{GPU}=8"))),
    Case("short in sum", filters.CapacityEstimate(), gpu_member("a", (8, 2)),
         wl=workload(pod_set(count=2, requests=f"{GPU}=8")), want_ok=False,
         want_reason=f"needs 16 {GPU} in total; the nodes with {MODEL}=a100 have 10 free"),
    Case("fits in sum, not node by node", filters.CapacityEstimate(),
         gpu_member("a", (4, 4, 4)), wl=workload(pod_set(count=2, requests=f"{GPU}=6")),
         want_ok=False,
         want_reason="podSet main: 2 pod(s) of nvidia.com/gpu=6 needed, the free nodes take 0 "
                     "(largest free per node: nvidia.com/gpu=4)"),
    Case("free GPUs on other models do not count", filters.CapacityEstimate(),
         member("a", gpu_nodes("x", (8,)) + gpu_nodes("y", (8,), model="t4")),
         wl=workload(pod_set(count=2, requests=f"{GPU}=8")), want_ok=False,
         want_reason="have 8 free"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_filter(case: Case) -> None:
    status = case.plugin.filter(request(case.wl, case.flavor, hints=case.hints), case.cluster)
    assert status.ok is case.want_ok
    assert case.want_reason in status.reason
    if case.want_ok:
        assert status.reason == ""


def test_builtin_filters_run_cheapest_first() -> None:
    assert [f.name for f in filters.BUILTIN] == [
        "Health", "ClusterAffinity", "TaintToleration", "DataLocality", "Hardware",
        "CapacityEstimate"]
