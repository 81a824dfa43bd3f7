"""Multi-cluster dispatch among Redis worker pools: pool members in the active scheduler.

A ClusterQueue opts in by listing an AdmissionCheck with controllerName
``kuota.dev/multicluster`` (parameters: a MultiClusterConfig); MemberCluster
objects with ``spec.pool`` make pools members. All of these are applied with
``kuota apply``. When any of them is stored, the leader wires a
:class:`multicluster.controller.Dispatcher` into its engine (as the
simulator does) through :class:`PoolMembers`, which keeps it fed:

* **Members from the pools' nodes.** Each pool member's value is built from
  the MemberCluster object (labels, taints, cost, datasets) and the pool's
  Ready nodes as the leader's :class:`~kuota.service.nodeview.NodeView` sees
  them — capacity, labels and what live pods hold — plus what gangs already
  dispatched there but not placed yet will take (the dispatcher's own
  estimate). Health is observed, not declared: a pool with a Ready node is
  Active and seen now; a pool with none (all its nodes lost past the node
  timeout, or none registered) is inactive (``NoReadyNodes``) and the Health
  filter refuses it. Members are rebuilt after every read of the nodes, after
  a dispatched workload lets go, and before waiting workloads are retried.
* **Verdicts.** A workload reserving quota gets its verdict from
  :meth:`Dispatcher.reserved` in the same cycle; those that found no member
  wait with their quota held, and are retried (:meth:`Dispatcher.poll`) when
  the members change. A Ready verdict names the member
  (:meth:`Engine.assign_cluster`), so the admission stored in Redis carries
  it and placement uses only that pool (:mod:`kuota.service.pinning`).
* **Decisions.** Every decision (``Decision.to_dict()``) is written to the
  workload's record in Redis (field ``dispatch``, fenced like every leader
  write) for ``kuota why``; while a workload waits, its pending reason says
  ``AdmissionCheck`` with the one-line summary.
* **Pool loss.** Workloads holding quota on a member whose pool lost all its
  nodes are evicted with reason ``ClusterLost``: their pods are asked to stop
  (a worker declared lost kills its pods itself), and they queue again and are
  dispatched to the next best member. This runs before the per-node
  ``NodeFailures`` check, so a workload is evicted once.

After a failover the new leader restores reservations whose check had not
answered yet and asks the dispatcher again (:meth:`PoolMembers.resume`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from admission.engine import READY, Engine, Record
from admission.events import Kind, WorkloadEvent
from kuota.service.nodeview import NodeView
from multicluster import convert
from multicluster.controller import CONTROLLER_NAME, Dispatcher
from multicluster.model import Health
from multicluster.settings import SettingsError
from placement.model import add_amounts
from quota import api
from quota.config import AdmissionCheckConfig
from quota.lifecycle import HOLDS_QUOTA, State
from quota.workload import Admission, WorkloadInfo

log = logging.getLogger(__name__)

#: Pending reason of a workload holding quota while its admission checks run.
CHECK_REASON = "AdmissionCheck"
#: Eviction reason when the member a workload was dispatched to lost all its nodes.
CLUSTER_LOST = "ClusterLost"


def wanted(objects: Iterable[object], members: Sequence[api.MemberCluster],
           configs: Sequence[api.MultiClusterConfig]) -> bool:
    """Is multi-cluster dispatch configured at all (a check, a member or a config)?"""
    return bool(members or configs) or any(
        isinstance(o, AdmissionCheckConfig) and o.controller_name == CONTROLLER_NAME
        for o in objects)


def _annotations(info: WorkloadInfo) -> Mapping[str, str]:
    """Dispatch hints come from the Workload's annotations (``kuota.dev/cluster-selector``…)."""
    source = info.source
    if isinstance(source, api.ApiObject):
        return dict(source.metadata.annotations or {})
    return {}


class PoolMembers:
    """The dispatcher of a leader and what feeds it; see the module docstring."""

    def __init__(self, engine: Engine, members: Iterable[api.MemberCluster],
                 configs: Iterable[api.MultiClusterConfig]) -> None:
        self.engine = engine
        self.dispatcher = Dispatcher(flavors=lambda: engine.cache.flavors,
                                     assign=engine.assign_cluster, annotations=_annotations)
        for config in configs:
            try:
                self.dispatcher.set_config(config)
            except SettingsError as exc:  # the check stays Pending, naming the config
                log.warning("skipping MultiClusterConfig %s: %s", config.metadata.name, exc)
        #: Member name -> its MemberCluster object; only pool members (Kubernetes members
        #: are dispatched to by the operator).
        self.objects = {m.metadata.name: m for m in members if m.spec.pool}
        skipped = sorted(m.metadata.name for m in members if not m.spec.pool)
        if skipped:
            log.warning("MemberCluster(s) %s are Kubernetes members: a Redis scheduler "
                        "dispatches only to pools", ", ".join(skipped))
        engine.controllers[CONTROLLER_NAME] = self.dispatcher
        #: Member -> when its pool last had a Ready node.
        self._last_ready: dict[str, float] = {}
        #: Workload -> the decision last written to Redis (the dispatcher's dict itself).
        self._written: dict[str, dict[str, Any]] = {}
        #: Members changed since the waiting workloads were last retried.
        self._changed = True

    # -- members ---------------------------------------------------------------------
    def pool_for(self, admission: Admission) -> str | None:
        """The pool a dispatched admission must run in: None when not dispatched,
        "" when dispatched to a member that is not a pool."""
        if admission.cluster is None:
            return None
        obj = self.objects.get(admission.cluster)
        return obj.spec.pool or "" if obj is not None else ""

    def pools(self) -> dict[str, str]:
        """Member name -> pool."""
        return {name: obj.spec.pool or "" for name, obj in self.objects.items()}

    def refresh(self, view: NodeView, unplaced: Iterable[str], now: float) -> None:
        """Rebuild every pool member from the nodes as ``view`` sees them now."""
        pools = view.pools()
        pending = self._unplaced_usage(unplaced)
        for name, obj in self.objects.items():
            pool = obj.spec.pool or ""
            nodes = [node.with_requested(pending.get(node.name) or {})
                     for node in pools.get(pool, [])]
            if nodes:
                self._last_ready[name] = now
                health = Health(True, "Active", f"{len(nodes)} Ready node(s) in pool {pool}",
                                now)
            else:
                health = Health(False, "NoReadyNodes",
                                f"pool {pool} has no Ready node (lost, or none registered)",
                                self._last_ready.get(name))
            info = convert.cluster_info(obj, nodes)
            self.dispatcher.set_member(dataclasses.replace(info, health=health))
        self._changed = True

    def _unplaced_usage(self, unplaced: Iterable[str]) -> dict[str, dict[str, int]]:
        """Node -> what gangs dispatched but not placed yet will add there."""
        out: dict[str, dict[str, int]] = {}
        for key in unplaced:
            dispatch = self.dispatcher.dispatched.get(key)
            if dispatch is None:
                continue
            for node, added in dispatch.added.items():
                add_amounts(out.setdefault(node, {}), added)
        return out

    def lost(self) -> dict[str, str]:
        """Workloads holding quota on a member whose pool has no Ready node -> why."""
        down = {name for name, member in self.dispatcher.members.items()
                if name in self.objects and not member.health.active}
        out: dict[str, str] = {}
        for key, record in self.engine.records.items():
            admission = record.admission
            if record.state in HOLDS_QUOTA and admission is not None \
                    and admission.cluster in down:
                pool = self.objects[admission.cluster].spec.pool
                out[key] = (f"member {admission.cluster} (pool {pool}) lost all its nodes; "
                            "dispatching again")
        return out

    # -- the engine's side -------------------------------------------------------------
    def observe(self, events: Iterable[WorkloadEvent]) -> bool:
        """Release what finished or was evicted; True if a member changed."""
        released = False
        for event in events:
            if event.kind in (Kind.FINISHED, Kind.EVICTED, Kind.DEACTIVATED):
                if event.key in self.dispatcher.dispatched:
                    released = True
                self.dispatcher.released(event.key)
            if event.kind is Kind.FINISHED:
                self.dispatcher.decisions.pop(event.key, None)
                self._written.pop(event.key, None)
        return released

    def retry(self, now: float) -> int:
        """Retry waiting workloads if members changed; returns how many verdicts changed."""
        if not self._changed or not self.dispatcher.waiting:
            self._changed = False
            return 0
        self._changed = False
        verdicts = self.dispatcher.poll(now)
        for verdict in verdicts:
            self.engine.set_check(verdict.key, verdict.check, verdict.state, now,
                                  verdict.message)
        return len(verdicts)

    def reasons(self) -> int:
        """Pending reason of workloads holding quota while their checks run; returns how
        many changed."""
        changed = 0
        for record in self.engine.records.values():
            if record.state is State.QUOTA_RESERVED and record.checks:
                message = _check_message(record)
                if (record.pending_reason, record.pending_message) != (CHECK_REASON, message):
                    record.pending_reason, record.pending_message = CHECK_REASON, message
                    changed += 1
            elif record.pending_reason == CHECK_REASON:
                record.pending_reason = record.pending_message = None
                changed += 1
        return changed

    def unwritten(self, attempts: Mapping[str, int]) -> list[tuple[str, int, str]]:
        """(key, attempt, decision JSON) of decisions not written yet; they count as
        written from now on (a refused write is for an attempt that is over)."""
        out = []
        for key, doc in self.dispatcher.decisions.items():
            if self._written.get(key) is doc or key not in attempts:
                continue
            self._written[key] = doc
            out.append((key, attempts[key], json.dumps(doc, sort_keys=True,
                                                       separators=(",", ":"))))
        return out


def _check_message(record: Record) -> str:
    return "; ".join(f"{name}: {state}" + (f": {message}" if message else "")
                     for name, (state, message) in sorted(record.checks.items())
                     if state != READY)

