"""A Redis worker pool as a member cluster of the Kubernetes operator (blocking; run in tasks).

A MemberCluster with ``spec.pool: NAME`` stands for the worker nodes
registered with pool NAME in the Redis the operator was given with
``--redis URL`` (key prefix: the operator's ``--pool-prefix``, by default
``kuota`` — the prefix ``kuota scheduler``/``kuota worker`` use unless
``KUOTA_PREFIX`` says otherwise). A ``kuota scheduler`` leading on that Redis
places and runs what the operator sends; the operator talks only to Redis,
through the store (:class:`queueing.store.Store`), never to the scheduler.

The three calls of :class:`~kuota.federation.member.MemberAdapter`:

* **observe** — the pool's Ready nodes (capacity and labels as their workers
  registered them), each with what the live pods of workloads *not* sent by
  this manager request there (the dispatcher counts its own); and the copies
  this manager sent to this member (records whose ``origin`` is the manager
  id), each with a Job-shaped status (:func:`.pool_copy.job_status`) that
  follows home like a Kubernetes copy's, and what its live pods request per
  node (:attr:`~kuota.federation.member.Copy.usage`, which a restarted
  operator adopts);
* **create** — the Job copy (:func:`kuota.federation.remote_job.build`) becomes
  a dispatched workload (:func:`.pool_copy.from_job`), stored
  create-if-absent under the Job's ``namespace/name``: a retried create finds
  its own record (``exists``). A Job that cannot be a pool copy
  (:class:`~kuota.federation.pool_copy.PoolCopyError`) or a live workload of
  that name submitted by someone else is a refusal
  (:func:`~kuota.federation.member.refused`), not a task failure: retrying
  cannot change it;
* **delete** — the copy's pods are asked to stop (their workers terminate
  them) and the record is removed; absent counts as deleted.

Task functions (module level, so rq imports them by name) take the member's
*spec*, plain values: ``{"kind": "Pool", "pool", "member", "origin", "redis",
"prefix"}``. Connections are cached per (URL, prefix) in the worker thread.
"""

from __future__ import annotations

import threading
import time
from typing import Final

from kuota.federation.member import Body, Copy, Observation, add_pod, refused
from kuota.federation.pool_copy import PoolCopyError, from_job, job_status
from kuota.service import placing
from kuota.service.connection import Connection, connect
from kuota.service.dispatched_spec import DispatchedSpec, SpecError, admission
from placement.model import Node
from queueing.store import AlreadyExists, PodRef

KIND: Final = "Pool"

_connections: dict[tuple[str, str], Connection] = {}
_lock = threading.Lock()


def pool_spec(*, pool: str, member: str, origin: str, redis: str, prefix: str) -> Body:
    """The task spec of a pool member."""
    return {"kind": KIND, "pool": pool, "member": member, "origin": origin, "redis": redis,
            "prefix": prefix}


def _connection(url: str, prefix: str) -> Connection:
    with _lock:
        found = _connections.get((url, prefix))
        if found is None:
            found = _connections[(url, prefix)] = connect(url, prefix=prefix)
        return found


class PoolMember:
    """The :class:`~kuota.federation.member.MemberAdapter` of one pool member."""

    def __init__(self, spec: Body) -> None:
        if spec.get("kind") != KIND or not spec.get("redis") or not spec.get("pool"):
            raise ValueError(f"not a pool member spec: {spec!r}")
        self.pool: str = spec["pool"]
        self.member: str = spec.get("member") or self.pool
        self.origin: str = spec["origin"]
        self.store = _connection(spec["redis"], spec.get("prefix") or "kuota").store

    def observe(self, origin: str) -> Observation:
        store = self.store
        problems: list[str] = []
        ready = [n for n in store.nodes.all() if n.ready and n.pool == self.pool]
        holding = store.nodes.pod_ids([n.name for n in ready])
        refs: list[PodRef] = []
        for ids in holding.values():
            for pod_id in sorted(ids):
                try:
                    refs.append(PodRef.parse(pod_id))
                except ValueError as exc:
                    problems.append(str(exc))
        owners = sorted({ref.workload for ref in refs})
        pipe = store.redis.pipeline(transaction=False)
        for key in owners:
            pipe.hget(store.keys.workload(key), "origin")
        ours = {key for key, found in zip(owners, pipe.execute(), strict=True)
                if found == origin}
        live = {p.ref.id: p for p in store.pods.get_many(refs) if p is not None and p.live}
        nodes: list[Node] = []
        #: Our copy (workload key) -> node -> what its live pods request there.
        usage: dict[str, dict[str, dict[str, int]]] = {}
        for record in ready:
            used = []
            for pod_id in sorted(holding.get(record.name, ())):
                pod = live.get(pod_id)
                if pod is None:
                    continue
                if pod.ref.workload in ours:
                    add_pod(usage.setdefault(pod.ref.workload, {}).setdefault(record.name, {}),
                            pod.requests)
                else:
                    used.append(pod.requests)
            nodes.append(placing.with_requests(placing.node_value(record), used))
        copies = []
        for copy in store.dispatched.list(origin):
            try:
                spec = DispatchedSpec.from_dict(copy.spec(), where=f"workload {copy.key}")
            except (SpecError, ValueError) as exc:
                problems.append(str(exc))
                continue
            if spec.member != self.member:
                continue  # sent to another member backed by this Redis
            namespace, _, name = copy.key.partition("/")
            copies.append(Copy(namespace, name, spec.workload, job_status(copy, spec),
                               usage.get(copy.key, {})))
        return Observation(tuple(nodes), tuple(copies), tuple(problems))

    def create(self, body: Body) -> str:
        # Both errors are answers retrying cannot change (the Job cannot be a pool copy; the
        # name is taken by a workload someone else sent): refusals, not task failures.
        try:
            key, spec = from_job(body, origin=self.origin, pool=self.pool, member=self.member)
            return self.store.dispatched.create(
                key, origin=self.origin, spec=spec.to_dict(), admission=admission(spec),
                pods=spec.pods, backoff_limit=spec.backoff_limit, now=time.time(),
                message=f"dispatched by {self.origin} (as member {self.member})")
        except (PoolCopyError, AlreadyExists) as exc:
            return refused(str(exc))

    def delete(self, namespace: str, name: str, kind: str = "Job") -> str:
        if kind != "Job":
            return "absent"  # (a pool is sent Jobs only: pool_copy.refusal)
        return self.store.dispatched.remove(f"{namespace}/{name}", origin=self.origin)
