"""Builders for store tests: a Store on a fresh fakeredis, and workloads in a chosen state."""

from __future__ import annotations

from typing import Any

import fakeredis

from queueing.store import PodRef, Store
from queueing.store.workloads import AdmitRequest, PlaceRequest, PodPlacement
from quota.workload import Admission, PodSetAdmission
from tests.integration.redis.harness import CQ, queues


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


def node(store: Store, name: str, cpu: int = 4, pool: str = "p", *,
         replace: bool = False) -> int:
    return store.nodes.register(name, pool=pool, capacity={"cpu": cpu * 1000}, labels={},
                                devices=[], now=1.0, replace=replace)


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


# -- a scheduler on fakeredis, stepped by the test ------------------------------------------

#: ClusterQueue ``cq`` (cpu=4) and its LocalQueue ``default/lq-cq``.
QUEUES = queues(CQ("cq", {"cpu": 4}))
LOCAL_QUEUE = "default/lq-cq"


class SteppedPool:
    """The :data:`QUEUES` and one scheduler on
    a fresh fakeredis, stepped by the test instead of a thread: no timing, no workers."""

    def __init__(self, **timing: Any) -> None:
        """``timing``: :class:`~kuota.service.leader.Timing` fields to change."""
        from kuota.client import Client
        from kuota.service.connection import connect

        self._timing = timing

        self.connection = connect(None, prefix="t", server=fakeredis.FakeServer())
        self.client = Client(connection=self.connection)
        self.client.apply(QUEUES)
        #: The scheduler's clock, moved by :meth:`run` (node checks come every 5 s of it).
        self.now = 1000.0
        self._schedulers = 0
        self.scheduler = self._new_scheduler()

    def _new_scheduler(self) -> Any:
        from kuota.service.leader import Timing
        from kuota.service.scheduler import SchedulerOptions, SchedulerService

        self._schedulers += 1
        return SchedulerService(self.connection, SchedulerOptions(
            identity=f"s{self._schedulers}",
            timing=Timing(**{"lease_ttl": 30, "poll": 0.01, "batch": 0.0, **self._timing}),
            clock=lambda: self.now))

    def restart_scheduler(self) -> None:
        """A failover: the scheduler lets its lease go and a new one starts from Redis."""
        self.scheduler.lease.release()
        self.scheduler = self._new_scheduler()

    @property
    def store(self) -> Store:
        return self.connection.store

    def submit(self, name: str, cpu: int = 1, count: int = 1) -> str:
        return self.client.submit(["true"], queue=LOCAL_QUEUE, name=name, count=count,
                                  requests={"cpu": cpu}).key

    def write_raw(self, name: str, spec: object) -> str:
        """A workload written straight into Redis, around every check."""
        key = f"default/{name}"
        self.store.workloads.submit(key, spec=spec, queue=LOCAL_QUEUE,  # type: ignore[arg-type]
                                    priority=0, backoff_limit=0, submission=name, now=1.0)
        return key

    def run(self, steps: int = 5, *, advance: float = 0.0) -> None:
        """``steps`` scheduler steps, the clock moved ``advance`` seconds before each."""
        for _ in range(steps):
            self.now += advance
            self.scheduler.step()

    def state(self, key: str) -> str:
        return str(self.store.redis.hget(self.store.keys.workload(key), "state"))


def workload_spec(name: str, *, count: object = 1, cpu: object = "1",
                  command: object = ("true",), env: object = None) -> dict[str, Any]:
    """A Workload manifest as a raw writer might store it (nothing checked)."""
    container: dict[str, Any] = {"name": "main", "command": command,
                                 "resources": {"requests": {"cpu": cpu}}}
    if env is not None:
        container["env"] = env
    return {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "lq-cq", "podSets": [
                {"name": "main", "count": count, "template": {"spec": {
                    "containers": [container]}}}]}}
