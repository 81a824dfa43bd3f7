"""Builders for placement test objects: short to write, explicit to read."""

from __future__ import annotations

from placement.model import Node, PodRequirements, Taint, TaintEffect, Toleration
from quota.resources import parse_vector

RACKS = ("cloud.provider.com/topology-block", "cloud.provider.com/topology-rack",
         "kubernetes.io/hostname")


def node(name: str, allocatable: str = "cpu=64,memory=256Gi,nvidia.com/gpu=8,pods=110",
         used: str = "", *, pods: int = 0, labels: dict[str, str] | None = None,
         taints: tuple[Taint, ...] = (), unschedulable: bool = False) -> Node:
    """A node; ``used`` is what bound pods request, ``pods`` how many they are."""
    requested = parse_vector(used)
    if pods:
        requested["pods"] = pods * 1000
    return Node(name, parse_vector(allocatable), requested, labels or {}, taints,
                unschedulable)


def gpu_node(name: str, used_gpus: int = 0, *, gpus: int = 8, block: str | None = None,
             rack: str | None = None) -> Node:
    labels = {"kubernetes.io/hostname": name}
    if block is not None:
        labels[RACKS[0]] = block
    if rack is not None:
        labels[RACKS[1]] = rack
    used = f"nvidia.com/gpu={used_gpus}" if used_gpus else ""
    return node(name, f"nvidia.com/gpu={gpus},pods=110", used, pods=used_gpus and 1,
                labels=labels)


def pod(requests: str = "nvidia.com/gpu=1", *, name: str = "", selector: dict[str, str] | None
        = None, tolerations: tuple[Toleration, ...] = (), **kw: object) -> PodRequirements:
    return PodRequirements(parse_vector(requests), selector or {}, tolerations=tolerations,
                           name=name, **kw)  # type: ignore[arg-type]


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> Taint:
    return Taint(key, TaintEffect(effect), value)
