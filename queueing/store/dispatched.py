"""Workloads dispatched into this store by a manager (multi-cluster dispatch to a pool).

A manager (the Kubernetes operator, or another Redis scheduler) that chose a
pool as the member cluster for one of its workloads hands the pool a *copy*.
The copy was admitted by the manager, against the manager's quotas, so here
it bypasses every queue, exactly as a Kubernetes copy bypasses a member's own
queues:

* :meth:`DispatchedStore.create` stores it directly in state ``Admitted``,
  with the admission the manager made, an empty ClusterQueue (no usage is
  counted against this store's ClusterQueues) and the field ``origin`` naming
  the manager. Create-if-absent: the key is chosen by the manager from its
  own workload, and a record of the same origin is the same copy, so a
  retried create is harmless; a live record of another origin (or a
  workload submitted here) is refused with :class:`AlreadyExists`.
* the active scheduler places it on the pool's nodes and the workers run it
  through the usual pod path; the usual ``POD_EXIT`` script finishes it.
* :meth:`DispatchedStore.remove` stops its pods and deletes the record (only
  a record of the caller's origin); absent counts as removed.
* :meth:`DispatchedStore.list` is what the manager observes: the records it
  sent (spec included, so it can tell which of its workloads each stands for).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from queueing.store.errors import AlreadyExists, Conflict, StoreError
from queueing.store.events import EVENTS_MAXLEN
from queueing.store.keys import Keys, PodRef
from queueing.store.records import WorkloadRecord, admission_to_json
from queueing.store.scripts import Scripts
from queueing.store.workloads import WorkloadStore
from quota.workload import Admission


class DispatchedStore:
    def __init__(self, redis: Any, keys: Keys, scripts: Scripts,
                 workloads: WorkloadStore) -> None:
        self._r = redis
        self._keys = keys
        self._scripts = scripts
        self._workloads = workloads

    def create(self, key: str, *, origin: str, spec: Mapping[str, Any], admission: Admission,
               pods: int, backoff_limit: int, now: float, message: str = "") -> str:
        """Store the copy if absent: ``"created"`` or ``"exists"`` (ours, stored before)."""
        if not origin:
            raise ValueError(f"dispatched workload {key}: origin must not be empty")
        if "/" not in key or ":" in key:
            raise ValueError(f"dispatched workload key {key!r} must be namespace/name")
        k = self._keys
        status = self._scripts.run(
            "dispatch", [k.workload(key), k.workloads, k.history(key), k.events,
                         k.dispatched(origin), k.unfinished, k.finished],
            [key, origin, now, EVENTS_MAXLEN,
             json.dumps(dict(spec), sort_keys=True, separators=(",", ":")),
             admission_to_json(admission), pods, backoff_limit,
             message or f"dispatched by {origin}"])
        if status.startswith("exists:"):
            raise AlreadyExists(f"workload {key}: a {status[7:]} workload not sent by "
                                f"{origin} has that name")
        if not status.startswith("ok:"):
            raise StoreError(f"dispatched workload {key}: {status}")
        return status[3:]

    def remove(self, key: str, *, origin: str) -> str:
        """Stop the copy's pods and delete it: ``"deleted"`` or ``"absent"``."""
        k = self._keys
        for _ in range(20):
            record = self._workloads.find(key)
            if record is None:
                return "absent"
            refs: list[PodRef] = record.pod_refs()
            status = self._scripts.run(
                "remove_dispatched", [k.workload(key), k.workloads, k.history(key), k.events,
                                      k.dispatched(origin), k.unfinished, k.finished,
                                      *(k.pod(ref) for ref in refs)],
                [key, origin, record.attempt, EVENTS_MAXLEN])
            if status.startswith("stale:"):
                continue
            if status.startswith("origin:"):
                raise Conflict(f"workload {key} was not dispatched by {origin} "
                               f"(origin {status[7:] or 'none: submitted here'}); not removed")
            return status[3:]
        raise Conflict(f"workload {key}: kept changing while being removed")

    def list(self, origin: str) -> list[WorkloadRecord]:
        """Every record dispatched here by ``origin``, with its spec: read through the
        origin's index, so a manager's look costs its copies, not the whole store."""
        index = self._keys.dispatched(origin)
        keys = sorted(str(k) for k in self._r.smembers(index))
        pipe = self._r.pipeline(transaction=False)
        for key in keys:
            pipe.hget(self._keys.workload(key), "origin")
        found = [(key, owner == origin) for key, owner in zip(keys, pipe.execute(), strict=True)]
        gone = [key for key, ours in found if not ours]  # forgotten, or replaced by another
        if gone:
            self._r.srem(index, *gone)
        return list(self._workloads.get_many([key for key, ours in found if ours]).values())
