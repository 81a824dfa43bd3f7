"""A stored Workload read back into the core's values, for a replica that leads anew.

A Workload that holds quota carries its admission in ``status.admission``
(Kueue's field): the ClusterQueue, and per pod set the flavors, the count and
the usage. Leading anew, the controller counts that admission again exactly
as it was written — no decision is taken again — so the quota tree is what it
was before the previous leader stopped. A pod set placed by topology-aware
admission also names its domains in ``topologyAssignment``; reading those
back gives the nodes its pods take, so their capacity stays taken.

The dashboard reads Workloads the same way to show usage from the objects.
"""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kuota.operator import status, topology
from quota import api
from quota.resources import parse_amount
from quota.workload import Admission, PodSetAdmission, WorkloadInfo

if TYPE_CHECKING:
    from admission.engine import Engine

Body = dict[str, Any]


def epoch(stamp: str | None, default: float) -> float:
    """An RFC 3339 timestamp (``metadata.creationTimestamp``) in seconds, ``default`` when
    it is absent or unreadable."""
    if not stamp:
        return default
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


def holds_quota(body: Body) -> bool:
    """Whether a Workload's status says it holds quota: an admission, and QuotaReserved."""
    return bool((body.get("status") or {}).get("admission")) \
        and status.is_true(body, "QuotaReserved")


def admission_from_status(stored: api.Admission, engine: Engine | None = None,
                          info: WorkloadInfo | None = None) -> Admission:
    """The core's Admission from a Workload's ``status.admission``.

    With ``engine`` and ``info``, a pod set's ``topologyAssignment`` is read back into
    the nodes and domains its pods take, so restoring it counts them again.
    """
    asked = {ps.name: ps.topology[1] for ps in info.pod_sets if ps.topology} if info else {}
    pod_sets = []
    for psa in stored.pod_set_assignments:
        admitted = PodSetAdmission(
            name=psa.name, count=psa.count or 0, flavors=dict(psa.flavors),
            usage={r: parse_amount(q) for r, q in psa.resource_usage.items()})
        if psa.topology_assignment is not None and engine is not None:
            state = engine.topology
            levels, domains, nodes = topology.placement_from_assignment(
                psa.topology_assignment,
                topology=topology.topology_of(psa.flavors.values(), engine.cache.flavors,
                                              state.topologies),
                asked=asked.get(psa.name), nodes=state.nodes)
            admitted = replace(admitted, topology_levels=levels, topology=tuple(domains),
                               nodes=tuple(nodes))
        pod_sets.append(admitted)
    return Admission(stored.cluster_queue, tuple(pod_sets))
