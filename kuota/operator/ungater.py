"""Ungating pods pinned to topology domains: the writes around :mod:`kuota.operator.pinning`.

An *owner* is a Job (``job:namespace/name``) or a pod group
(``group:namespace/group``) whose pods carry the gate ``kuota.dev/topology``.
:func:`ungate` runs when such a pod appears or changes and when the owner's
Workload is admitted. It does nothing until the engine holds the Workload
*Admitted* and that admission is stored in its status (pods keep their gate
while it waits, and after an eviction). Then, per pod set, it reads the
``topologyAssignment`` stored in ``status.admission`` — what the cluster
sees, not what the engine may decide next — asks
:func:`kuota.operator.pinning.plan` which gated pods go where, and patches
each pod once: the domain's labels merged into ``spec.nodeSelector`` and the
gate removed, guarded by the pod's resourceVersion. A conflict is left to the
pod's next watch event, which asks again; other refusals are raised once the
other pods are done, and the writer queues the owner's ungating again when
they are transient.

A gated pod's nodeSelector may only gain keys. A pod whose nodeSelector
already names a level of the assignment with a value no domain has (set by
its template, or added to it by an admission plugin such as
PodNodeSelector) can never be pinned: it is found before any write
(:func:`kuota.operator.pinning.unplaceable`) and, like a patch the API
server refuses anyway (422), handed to
:func:`kuota.operator.owners.placement_conflict`, which deactivates the
Workload with Warning Events on the pod and on the Workload.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kuota.operator import kinds, names, owners, pinning
from kuota.operator.client import ApiError
from kuota.operator.kinds import podgroups
from quota import api

if TYPE_CHECKING:
    from kuota.operator.owner_writes import OwnerWrites

log = logging.getLogger(__name__)
Body = dict[str, Any]


def stored_assignments(workload: Body) -> dict[str, api.TopologyAssignment]:
    """PodSet name -> the ``topologyAssignment`` stored in a Workload's status (malformed
    ones are logged and left out: their pods stay gated)."""
    admission = (workload.get("status") or {}).get("admission") or {}
    out: dict[str, api.TopologyAssignment] = {}
    for psa in admission.get("podSetAssignments") or []:
        raw = psa.get("topologyAssignment") if isinstance(psa, dict) else None
        if raw is None:
            continue
        try:
            out[str(psa.get("name") or "main")] = api.TopologyAssignment.model_validate(raw)
        except ValidationError as exc:
            meta = workload.get("metadata") or {}
            log.warning("Workload %s/%s: status.admission.podSetAssignments[%s]"
                        ".topologyAssignment is malformed; its pods stay gated: %s",
                        meta.get("namespace"), meta.get("name"), psa.get("name"), exc)
    return out


async def ungate(writer: OwnerWrites, owner: str) -> None:
    controller = writer.controller
    kind, _, key = owner.partition(":")
    workload = controller.owners.workload_of_owner.get(kinds.owner_key("Job", key)) \
        if kind == "job" else controller.owners.workload_of_group.get(key)
    running = owners.admitted_record(writer, workload)
    body = controller.objects.get("Workload", workload) if workload else None
    if running is None or running.admission is None or body is None:
        return  # not admitted (yet, or any more): the pods keep their gate
    assignments = stored_assignments(body)
    pods = controller.owners.topology_pods_of(owner)
    failed: ApiError | None = None
    for ps in running.admission.pod_sets:
        # A group's pod is pinned once started (its admission gate lifted, its podSet
        # recorded): pinning first would change the shape its start is computed from.
        members = pods if kind == "job" else [
            p for p in pods if not podgroups.gated(p) and podgroups.pod_set_of(p) == ps.name]
        if ps.topology_levels and ps.name not in assignments:
            continue  # placed, but the placement is not readable: never pin blindly
        assignment = assignments.get(ps.name)
        levels = assignment.levels if assignment is not None else None
        domains = list(assignment.domains()) if assignment is not None else None
        for pod in members:
            problem = pinning.unplaceable(pod, levels, domains) \
                if pinning.gated(pod) and not pinning.gone(pod) else None
            if problem is not None:
                owners.placement_conflict(writer, workload, pod, problem)
                return
        for pod, chosen in pinning.plan(members, levels, domains):
            try:
                if not await _release(writer, workload, pod, chosen):
                    return
            except ApiError as exc:
                log.warning("pod %s not ungated: %s", pod["metadata"].get("name"), exc)
                failed = exc  # the other pods first; then the writer queues this again
    if failed is not None:
        raise failed


async def _release(writer: OwnerWrites, workload: str | None, pod: Body,
                   chosen: dict[str, str]) -> bool:
    """Remove the topology gate and pin the pod to ``chosen`` node labels, in one patch.
    False when the API server refused it for good (the Workload is deactivated); other
    refusals are raised."""
    meta = pod["metadata"]
    namespace, name = meta.get("namespace") or "default", meta["name"]
    spec = pod.get("spec") or {}
    gates = [g for g in spec.get("schedulingGates") or []
             if g.get("name") != names.TOPOLOGY_GATE]
    patch_spec: Body = {"schedulingGates": gates or None}
    if chosen:
        patch_spec["nodeSelector"] = chosen
    patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": patch_spec}
    try:
        stored = await writer.client.patch(names.PODS, name, patch, namespace)
    except ApiError as exc:
        if exc.conflict:  # the pod changed: its watch event asks again
            writer.metrics.conflicts.inc()
        elif exc.status == 422:  # found by the server, not by unplaceable(): as final
            owners.placement_conflict(writer, workload, pod, exc.message)
            return False
        elif not exc.not_found:
            raise
        return True
    writer.controller.observe("Pod", stored)
    where = ", ".join(f"{k}={v}" for k, v in chosen.items()) or "no topology domain"
    writer.recorder.event(stored, "Normal", "TopologyUngated", f"Pinned to {where}")
    return True
