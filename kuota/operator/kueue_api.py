"""Serving Kueue's own API group: ``kuota operator --api kueue``.

In this mode kuota reads and writes ResourceFlavors, Cohorts, ClusterQueues,
LocalQueues, AdmissionChecks, Topologies, WorkloadPriorityClasses and
Workloads as ``kueue.x-k8s.io/v1beta2`` (:func:`kuota.operator.names.serve`),
so Kueue's manifests, ``kueuectl`` and Kueue's performance runner work
unchanged. The CRDs are kuota's models serialised under Kueue's group
(``manifests/kueue``, made by ``kuota crds --kueue``): ``v1beta2`` stored,
``v1beta1`` served through the conversion webhook
(:mod:`kuota.operator.conversion`).

Two controllers reconciling the same objects would fight over every status
and admission, so kuota refuses to start in this mode beside Kueue:

* a Lease named like Kueue's leader election (``c1f6bfd2.kueue.x-k8s.io``, in
  any namespace) renewed within its duration (plus a grace) means Kueue's
  controller manager runs;
* a ``kueue.x-k8s.io`` CRD not labelled as kuota's means Kueue's CRDs are
  installed (their conversion webhook calls Kueue's Service, not kuota's).

Deciding is pure (:func:`kueue_running`, :func:`foreign_crds`);
:func:`refusal` reads the objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from kuota.operator import names

if TYPE_CHECKING:
    from kuota.operator.client import Client

#: Kueue's leader-election Lease (its default ``leaderElection.resourceName``).
KUEUE_LEASE: Final = "c1f6bfd2.kueue.x-k8s.io"
#: The label kuota's CRDs of Kueue's group carry.
PART_OF: Final = ("app.kubernetes.io/part-of", "kuota")
#: A lease renewed this long after its duration ran out still counts as held.
GRACE: Final = 30.0

_CRDS: Final = names.Res("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                         "CustomResourceDefinition", False)


def kueue_running(leases: Iterable[Mapping[str, Any]], now: float) -> str | None:
    """Why Kueue's controller counts as running, or None: a fresh Kueue leader Lease."""
    for lease in leases:
        meta = lease.get("metadata") or {}
        spec = lease.get("spec") or {}
        if meta.get("name") != KUEUE_LEASE or not spec.get("holderIdentity"):
            continue
        renewed = _epoch(spec.get("renewTime") or spec.get("acquireTime"))
        duration = float(spec.get("leaseDurationSeconds") or 15)
        if renewed is not None and now - renewed <= duration + GRACE:
            return (f"Kueue's controller holds Lease {meta.get('namespace')}/{KUEUE_LEASE} "
                    f"(holder {spec['holderIdentity']}, renewed {now - renewed:.0f} s ago)")
    return None


def foreign_crds(crds: Iterable[Mapping[str, Any]]) -> str | None:
    """Why Kueue's own CRDs count as installed, or None: a ``kueue.x-k8s.io`` CRD that
    is not kuota's."""
    foreign = sorted(
        str((crd.get("metadata") or {}).get("name"))
        for crd in crds
        if (crd.get("spec") or {}).get("group") == names.KUEUE
        and ((crd.get("metadata") or {}).get("labels") or {}).get(PART_OF[0]) != PART_OF[1])
    if not foreign:
        return None
    return (f"CRDs {', '.join(foreign)} are not kuota's (label {PART_OF[0]}={PART_OF[1]} "
            "missing): Kueue's CRDs are installed")


async def refusal(client: Client, now: float) -> str | None:
    """Why kuota must not serve Kueue's group on this cluster, or None."""
    leases = await client.request("GET", "/apis/coordination.k8s.io/v1/leases",
                                  params={"fieldSelector": f"metadata.name={KUEUE_LEASE}"})
    problem = kueue_running(leases.get("items") or [], now)
    if problem is None:
        crds, _ = await client.list(_CRDS)
        problem = foreign_crds(crds)
    if problem is None:
        return None
    return (f"--api kueue: {problem}. kuota and Kueue must not reconcile the same objects: "
            "uninstall Kueue first (its Deployment and CRDs), or run kuota with --api kuota")


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
