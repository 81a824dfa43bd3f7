"""Builders for multi-cluster tests: members, workloads, admissions, requests.

    members = [gpu_member("eu", nodes=3, free_gpus=(8, 4, 0)), cpu_member("us")]
    wl = workload(pod_set("main", 4, "nvidia.com/gpu=2"))
    decision = decide(wl, admit(wl, "a100"), members)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from multicluster.decision import Decision, select
from multicluster.hints import NO_HINTS, Hints
from multicluster.model import FREE, ClusterInfo, CostTable, Health
from multicluster.request import DispatchRequest, build_request
from multicluster.settings import DispatchConfig, build_config, default_registry
from placement.model import Node, Taint, TaintEffect
from quota.api.meta import Toleration
from quota.config import FlavorConfig
from quota.resources import parse_vector
from quota.workload import Admission, PodSetAdmission, PodSetInfo, WorkloadInfo

NOW = 10_000.0
GPU = "nvidia.com/gpu"
MODEL = "gpu.example.com/model"

FLAVORS: dict[str, FlavorConfig] = {
    "a100": FlavorConfig("a100", {MODEL: "a100"}),
    "t4": FlavorConfig("t4", {MODEL: "t4"}),
    "default": FlavorConfig("default"),
    "spot": FlavorConfig("spot", {"lifecycle": "spot"},
                         tolerations=(Toleration(key="spot", operator="Exists"),)),
}


def node(name: str, allocatable: str = "cpu=32,memory=128Gi,pods=110", used: str = "", *,
         labels: dict[str, str] | None = None, taints: tuple[Taint, ...] = (),
         unschedulable: bool = False) -> Node:
    return Node(name, parse_vector(allocatable), parse_vector(used), labels or {}, taints,
                unschedulable)


def gpu_nodes(prefix: str, free_gpus: Iterable[int], *, gpus: int = 8,
              model: str = "a100") -> tuple[Node, ...]:
    """One node per entry, each with ``gpus`` GPUs of which the entry is free."""
    return tuple(node(f"{prefix}-{i}", f"cpu=64,memory=512Gi,{GPU}={gpus},pods=110",
                      f"{GPU}={gpus - free}" if free < gpus else "",
                      labels={MODEL: model})
                 for i, free in enumerate(free_gpus))


def member(name: str, nodes: Iterable[Node] = (), *, labels: dict[str, str] | None = None,
           taints: tuple[Taint, ...] = (), cost: CostTable = FREE,
           datasets: Iterable[str] = (), active: bool = True, reason: str = "",
           last_seen: float | None = NOW) -> ClusterInfo:
    return ClusterInfo(name, labels or {}, taints, cost, frozenset(datasets),
                       Health(active, reason, "", last_seen), tuple(nodes))


def gpu_member(name: str, free_gpus: Iterable[int] = (8, 8), *, model: str = "a100",
               **kw: Any) -> ClusterInfo:
    return member(name, gpu_nodes(name, free_gpus, model=model), **kw)


def prices(**per_unit: float) -> CostTable:
    """Prices per whole unit (one cpu, one GPU) per hour; ``nvidia_com_gpu`` spells the GPU."""
    return CostTable({(k.replace("nvidia_com_gpu", GPU), None): v / 1000
                      for k, v in per_unit.items()})


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> Taint:
    return Taint(key, TaintEffect(effect), value)


def pod_set(name: str = "main", count: int = 1, requests: str = f"{GPU}=1", *,
            tolerations: tuple[Toleration, ...] = (),
            selector: dict[str, str] | None = None) -> PodSetInfo:
    return PodSetInfo(name, count, parse_vector(requests), node_selector=selector or {},
                      tolerations=tolerations)


def workload(*pod_sets: PodSetInfo, name: str = "train") -> WorkloadInfo:
    return WorkloadInfo("ml", name, "gpu-queue", pod_sets or (pod_set(),))


def admit(wl: WorkloadInfo, flavor: str | Mapping[str, str] = "a100") -> Admission:
    """Every pod set admitted whole; ``flavor`` per podSet name, or one for all."""
    placed = []
    for ps in wl.pod_sets:
        chosen = flavor if isinstance(flavor, str) else flavor[ps.name]
        placed.append(PodSetAdmission(ps.name, ps.count, dict.fromkeys(ps.requests, chosen),
                                      ps.total()))
    return Admission("gpu-cq", tuple(placed))


def request(wl: WorkloadInfo, flavor: str | Mapping[str, str] = "a100", *,
            hints: Hints = NO_HINTS, now: float = NOW,
            stale_after: float = 60.0) -> DispatchRequest:
    return build_request(wl, admit(wl, flavor), flavors=FLAVORS, hints=hints, now=now,
                         stale_after=stale_after)


def config(*, weights: Mapping[str, int] | None = None, disabled: Iterable[str] = (),
           clusters: Iterable[str] = ()) -> DispatchConfig:
    return build_config(default_registry(), name="fleet", clusters=clusters,
                        disabled_filters=disabled, weights=weights)


def decide(wl: WorkloadInfo, members: Iterable[ClusterInfo], *,
           flavor: str | Mapping[str, str] = "a100", hints: Hints = NO_HINTS,
           cfg: DispatchConfig | None = None, now: float = NOW,
           exclude: Mapping[str, str] | None = None) -> Decision:
    return select(wl, admit(wl, flavor), members, cfg or config(), now=now, flavors=FLAVORS,
                  hints=hints, exclude=exclude)
