"""Builders for store tests: a Store on a fresh fakeredis, and workloads in a chosen state."""

from __future__ import annotations

from typing import Any

import fakeredis

from queueing.store import PodRef, Store
from queueing.store.workloads import AdmitRequest, PlaceRequest, PodPlacement
from quota.workload import Admission, PodSetAdmission


def new_store(prefix: str = "t") -> Store:
    return Store(fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True), prefix)


def spec(name: str = "w", namespace: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"queueName": "lq"}}


def admission(cq: str = "cq", count: int = 1, cpu: int = 1000) -> Admission:
    return Admission(cq, (PodSetAdmission("main", count, {"cpu": "default"},
                                          {"cpu": cpu * count}),))


def submit(store: Store, key: str = "ns/w", *, backoff_limit: int = 0,
           submission: str = "s1", now: float = 1.0) -> bool:
    namespace, name = key.split("/")
    return store.workloads.submit(key, spec=spec(name, namespace), queue=f"{namespace}/lq",
                                  priority=0, backoff_limit=backoff_limit,
                                  submission=submission, now=now)


def lead(store: Store, identity: str = "s1") -> str:
    lease = store.lease(identity, 30)
    assert lease.acquire()
    assert lease.holder is not None
    return lease.holder


def admit(store: Store, holder: str, key: str = "ns/w", *, pods: int = 1, attempt: int = 0,
          decision: str = "d1") -> str:
    [status] = store.workloads.admit_many(
        holder, [AdmitRequest(key, attempt, admission(count=pods), pods, decision)], now=2.0)
    return status


def node(store: Store, name: str, cpu: int = 4, pool: str = "p") -> int:
    return store.nodes.register(name, pool=pool, capacity={"cpu": cpu * 1000}, labels={},
                                devices=[], now=1.0)


def place(store: Store, holder: str, key: str, attempt: int,
          nodes: list[tuple[str, int]]) -> str:
    pods = tuple(PodPlacement(PodRef(key, attempt, i), name, "main", {"cpu": 1000}, epoch)
                 for i, (name, epoch) in enumerate(nodes))
    [status] = store.workloads.place_many(holder, [PlaceRequest(key, attempt, pods)], now=3.0)
    return status


def running_gang(store: Store, key: str = "ns/w", *, pods: int = 2, backoff_limit: int = 0,
                 start: bool = True) -> tuple[str, list[PodRef]]:
    """A workload admitted, placed on one node per pod and (optionally) started."""
    holder = lead(store)
    submit(store, key, backoff_limit=backoff_limit)
    assert admit(store, holder, key, pods=pods) == "ok:1"
    nodes = [(f"n{i}", node(store, f"n{i}")) for i in range(pods)]
    assert place(store, holder, key, 1, nodes) == "ok"
    refs = [PodRef(key, 1, i) for i in range(pods)]
    if start:
        for ref, (name, epoch) in zip(refs, nodes, strict=True):
            assert store.pods.start(ref, node=name, epoch=epoch, devices="", now=4.0) == "ok"
    return holder, refs
