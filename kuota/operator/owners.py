"""What Workloads stand for — Jobs, JobSets, pod groups — created, started and stopped.

* An object of a suspendable kind (:mod:`kuota.operator.kinds`) or a complete
  pod group without a Workload gets one (a 409
  AlreadyExists means another write won: the existing one is read).
* :func:`sync_owner` / :func:`sync_group` bring the owner in line with its
  Workload: started (unsuspended / ungated, with the flavors' node labels
  and tolerations) only when the engine holds it *Admitted* and that very
  admission is stored in the Workload's status; stopped otherwise. A Job is
  stopped by suspending it and restoring its template, in the steps
  :mod:`kuota.operator.kinds.jobs` explains; pods that kuota let run are deleted
  when their group is evicted (a pod cannot be gated again) — once: a
  terminating pod is left to die — and their replacements wait gated like
  the first ones.
* A Job being deleted (or gone) never gets a Workload, and the one it had
  is deleted here (:func:`delete_workload`), whatever propagation the
  deletion used: ``batch/v1`` Jobs orphan their dependents by default, and
  a foreground deletion deletes the Workload while the Job still exists.
  Pod groups have no owner the garbage collector could follow at all.

Each write carries the resourceVersion it was computed from and is
recomputed after a 409. Transient failures the client gave up on are raised:
the writer queues the sync again after a backoff (a pod group's once its
other pods are done). A Job write the API server refuses on its merits (a
422, a 403) is never dropped while the Workload holds quota either: it is
reported — a Warning Event on the Job and on its Workload, and the log — and
tried again with a growing delay (:meth:`Writer.retry`). A group's pod that
can never take its admission's nodeSelector (a key it already has with
another value: a gated pod's nodeSelector may only gain keys) deactivates
the Workload — see :func:`placement_conflict`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kuota.operator import kinds, names, priorities
from kuota.operator.client import ApiError
from kuota.operator.kinds import contract, podgroups
from kuota.operator.objects import being_deleted, key_of
from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Record
    from kuota.operator.owner_writes import OwnerWrites

log = logging.getLogger(__name__)
Body = dict[str, Any]


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


async def _create(writer: OwnerWrites, manifest: Body, owner: Body, work: str,
                  again: Callable[[], None]) -> None:
    """Create a Workload (a 409 means another write won: the existing one is read).

    A refusal on its merits is not final either: its owner would wait suspended, or
    gated, for ever. It is reported (a Warning Event on the owner, once per distinct
    refusal) and tried again with a growing delay — the API server may not know yet a
    kind whose CRD was just installed (its owner-reference check answers 403 "cannot find
    RESTMapping"), a webhook may be down, a ResourceQuota full. Transient failures are
    raised: the writer queues the creation again after a backoff."""
    namespace = manifest["metadata"]["namespace"]
    try:
        created = await writer.client.create(names.WORKLOADS, manifest, namespace)
        # As Kueue: what a user describing the object sees first links it to its Workload.
        writer.recorder.event(owner, "Normal", "CreatedWorkload",
                              f"Created Workload: {namespace}/{manifest['metadata']['name']}")
    except ApiError as exc:
        if exc.status != 409:
            if writer.report(work, str(exc)):
                writer.recorder.event(owner, "Warning", "WorkloadNotCreated", str(exc))
            if not exc.transient:
                delay = writer.retry(work, again)
                log.warning("Workload %s/%s not created (trying again in %.0fs): %s",
                            namespace, manifest["metadata"]["name"], delay, exc)
                return
            raise
        created = await writer.client.get(names.WORKLOADS, manifest["metadata"]["name"],
                                          namespace)
    writer.succeeded(work)
    writer.controller.observe("Workload", created)


def admitted_record(writer: OwnerWrites, workload: str | None) -> Record | None:
    """The engine's record if it may run now: Admitted, and that admission is stored."""
    engine = writer.controller.engine
    record = engine.records.get(workload) if engine is not None and workload else None
    if record is None or record.state is not State.ADMITTED or record.admission is None:
        return None
    return record if writer.persisted.get(record.info.key) == record.admission else None


# -- objects of the suspendable kinds --------------------------------------------------------

async def create_workload(writer: OwnerWrites, owner: str) -> None:
    """The Workload of an object (a Job, a JobSet, ...) that has none."""
    controller = writer.controller
    obj = controller.owners.object_of(owner)
    if obj is None or owner in controller.owners.workload_of_owner or controller.engine is None \
            or being_deleted(obj):
        return
    queue = controller.owners.queue(obj)
    if queue is None:
        return
    kind = kinds.KINDS[kinds.split_owner(owner)[0]]
    if kind.runs_through is not None and contract.child_of(obj) is None:
        return  # its pod sets are its child's: made once the child is seen
    try:
        problem = kind.refusal(obj)
        manifest = None if problem is not None else contract.workload_for(
            kind, obj, queue=queue, priority=0, priority_class=None)
    except (ValueError, TypeError, AttributeError) as exc:  # a malformed object
        problem, manifest = f"its pod sets cannot be read: {exc}", None
    if manifest is None:
        message = f"{kind.kind} {kinds.split_owner(owner)[1]} cannot be queued: {problem}"
        if writer.report(f"refused:{owner}", message):
            log.warning("%s", message)
            writer.recorder.event(obj, "Warning", "CannotQueue", message)
        return
    work, again = f"create:{owner}", lambda: writer.create_workload(owner)
    resolved = await priorities.resolve(writer, (obj.get("metadata") or {}).get("labels") or {},
                                        manifest["spec"]["podSets"])
    if isinstance(resolved, priorities.Missing):
        priorities.wait(writer, resolved, obj, work, again)
        return
    await _create(writer, priorities.apply(manifest, *resolved), obj, work, again)


def _owner_write(writer: OwnerWrites, owner: str, obj: Body) -> contract.Write | None:
    controller = writer.controller
    engine = controller.engine
    kind = kinds.KINDS[kinds.split_owner(owner)[0]]
    workload = controller.owners.workload_of_owner.get(owner)
    if engine is None or controller.owners.queue(obj) is None \
            or kind.finished(obj) is not None or being_deleted(obj):
        return None
    record = engine.records.get(workload) if workload else None
    if record is not None and record.state is State.FINISHED:
        return None
    running = admitted_record(writer, workload)
    if running is not None and running.admission is not None \
            and running.admission.cluster is None:  # not dispatched: it runs here
        return kind.start_write(obj, running.admission, engine.cache.flavors)
    return kind.stop_write(obj)


_ANNOUNCED = {"start": ("Started", "Admitted: the {kind} may run"),
              "suspend": ("Suspended", "Suspended by kuota until its Workload is admitted")}


async def sync_owner(writer: OwnerWrites, owner: str) -> None:
    """Bring an object in line with its Workload: started, or stopped and restored."""
    controller = writer.controller
    kind_name, key = kinds.split_owner(owner)
    kind = kinds.KINDS[kind_name]
    namespace, name = _split(key)
    obj = controller.owners.object_of(owner)
    work = f"{kind_name.lower()}:{key}"
    for _ in range(controller.options.conflict_retries + 1):
        if obj is None:
            return
        write = _owner_write(writer, owner, obj)
        if write is None:
            writer.succeeded(work)
            return
        patch = dict(write.patch)
        patch["metadata"] = {**(patch.get("metadata") or {}),
                             "resourceVersion": obj["metadata"].get("resourceVersion")}
        try:
            stored = await writer.client.patch(kind.res, name, patch, namespace,
                                               subresource=write.subresource)
        except ApiError as exc:
            if exc.not_found:
                return
            if not exc.conflict:
                if exc.transient:
                    raise  # the client gave up for now: the writer queues the sync again
                _refused(writer, owner, obj, write, exc)
                return
            writer.metrics.conflicts.inc()
            found = await writer.client.find(kind.res, name, namespace)
            if found is not None:
                controller.observe(kind_name, found)
            obj = controller.owners.object_of(owner) if found is not None else None
            continue
        writer.succeeded(work)
        controller.observe(kind_name, stored)
        if write.step in _ANNOUNCED:
            reason, text = _ANNOUNCED[write.step]
            writer.recorder.event(stored, "Normal", reason, text.format(kind=kind_name))
        return


def _refused(writer: OwnerWrites, owner: str, obj: Body, write: contract.Write,
             exc: ApiError) -> None:
    """The API server refused a write to an object: say so where users look, and try
    again."""
    controller = writer.controller
    kind_name, key = kinds.split_owner(owner)
    workload = controller.owners.workload_of_owner.get(owner)
    what = {"start": "started", "suspend": "suspended", "reset": "reset (status.startTime)",
            "prepare": "prepared to start", "restore": "restored"}[write.step]
    reason = f"{kind_name}NotStarted" if write.step in ("start", "prepare") \
        else f"{kind_name}NotStopped"
    message = f"{kind_name} {key} could not be {what}: {exc}"
    work = f"{kind_name.lower()}:{key}"
    delay = writer.retry(work, lambda: writer.sync_owner(owner))
    log.warning("%s; trying again in %.0fs", message, delay)
    if writer.report(work, message):
        writer.recorder.event(obj, "Warning", reason, f"{message}; kuota tries again")
        writer.recorder.event(controller.objects.get("Workload", workload) if workload else None,
                              "Warning", reason, f"{message}; kuota tries again")


async def delete_workload(writer: OwnerWrites, key: str) -> None:
    """Delete a Workload whose owner is gone or being deleted (the quota it holds is
    released when its deletion is seen). Guarded by its uid: a Workload of the same name
    made since is left alone."""
    body = writer.controller.objects.get("Workload", key)
    if body is None:
        return
    namespace, name = _split(key)
    options = {"propagationPolicy": "Background",
               "preconditions": {"uid": body["metadata"].get("uid")}}
    try:
        await writer.client.request("DELETE", names.WORKLOADS.path(namespace, name), options)
    except ApiError as exc:
        if not exc.not_found and not exc.conflict:  # (else: gone, or another one by now)
            delay = writer.retry(f"delete:{key}", lambda: writer.delete_workload(key))
            log.warning("Workload %s not deleted (trying again in %.0fs): %s", key, delay, exc)
            return
    writer.succeeded(f"delete:{key}")
    log.info("Workload %s deleted: what it stands for is gone or being deleted", key)


def placement_conflict(writer: OwnerWrites, workload: str | None, pod: Body, message: str) -> None:
    """A gated pod can never take the nodeSelector its admission needs: deactivate the
    Workload (its quota is released once its running pods are gone).

    Why deactivate rather than keep waiting or requeue: the pod stays gated for ever (the
    API server refuses the change every time), so holding the quota would block others for
    nothing; requeued, the same admission would be found again and fail again. Deactivated,
    the Workload says why (Warning Events on the pod and on the Workload, ``Evicted`` with
    the message) and waits for its user to fix the pod or its template and set
    ``spec.active`` back to true.
    """
    controller = writer.controller
    engine = controller.engine
    record = engine.records.get(workload) if engine is not None and workload else None
    if record is None or record.state not in (State.QUOTA_RESERVED, State.ADMITTED):
        return  # deactivated already (or holding nothing to give back)
    meta = pod.get("metadata") or {}
    text = f"pod {meta.get('namespace')}/{meta.get('name')} cannot be placed: {message}"
    log.warning("Workload %s: %s; deactivating it", workload, text)
    writer.recorder.event(pod, "Warning", "NodeSelectorConflict", text)
    writer.recorder.event(controller.objects.get("Workload", record.info.key), "Warning",
                          "NodeSelectorConflict", text)
    controller.deactivate(record.info.key, "NodeSelectorConflict",
                          f"{text}; fix it and set spec.active to true again")


# -- pod groups ------------------------------------------------------------------------------

async def create_group_workload(writer: OwnerWrites, group_key: str) -> None:
    controller = writer.controller
    if group_key in controller.owners.workload_of_group or controller.engine is None:
        return
    pods = [p for p in controller.owners.pods_of(group_key) if podgroups.live(p)]
    total = controller.owners.group_sizes.get(group_key, 0)
    if not pods or not podgroups.enough(pods, total):
        return
    labels = (pods[0].get("metadata") or {}).get("labels") or {}
    queue = names.first_of(labels, names.QUEUE_LABELS)
    if queue is None:
        return
    pods = sorted(pods, key=lambda p: p["metadata"]["name"])[:total]
    manifest = podgroups.workload_for(group_key, pods, queue=queue, priority=0, total=total,
                                      priority_class=None)
    work = f"create:group:{group_key}"
    again = functools.partial(writer.create_group_workload, group_key)
    resolved = await priorities.resolve(writer, labels, manifest["spec"]["podSets"])
    if isinstance(resolved, priorities.Missing):
        priorities.wait(writer, resolved, pods[0], work, again)
        return
    await _create(writer, priorities.apply(manifest, *resolved), pods[0], work, again)


async def sync_group(writer: OwnerWrites, group_key: str) -> None:
    controller = writer.controller
    engine = controller.engine
    workload = controller.owners.workload_of_group.get(group_key)
    record = engine.records.get(workload) if engine is not None and workload else None
    if engine is None or record is None or record.state is State.FINISHED:
        return
    running = admitted_record(writer, workload)
    # Terminating pods are on their way out: nothing to start, delete or announce again.
    pods = [p for p in controller.owners.pods_of(group_key) if not being_deleted(p)]
    if running is not None and running.admission is not None:
        for pod in pods:  # the gang starts whole or not at all
            problem = podgroups.start_conflict(pod, running.admission, engine.cache.flavors)
            if problem is not None:
                placement_conflict(writer, workload, pod, problem)
                return
    failed: ApiError | None = None
    starting: set[str] = set()
    if running is not None and running.admission is not None:
        start, excess = podgroups.startable(pods, running.admission)
        starting = {p["metadata"]["name"] for p in start}
        for pod in excess:
            text = (f"pod {pod['metadata']['name']} is beyond what its group's Workload "
                    f"{workload} admits (a pod set of its shape, of the size admitted): "
                    f"it stays gated")
            if writer.report(f"excess:{key_of(pod)}", text):
                log.warning("%s", text)
                writer.recorder.event(pod, "Warning", "ExcessPod", text)
    for pod in pods:
        namespace, name = _split(f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}")
        try:
            if running is not None and running.admission is not None:
                if name not in starting:
                    continue
                patch = podgroups.start_patch(pod, running.admission, engine.cache.flavors)
                if patch is not None:
                    patch["metadata"]["resourceVersion"] = pod["metadata"]["resourceVersion"]
                    stored = await writer.client.patch(names.PODS, name, patch, namespace)
                    controller.observe("Pod", stored)
            elif podgroups.started(pod) and not podgroups.terminal(pod):
                stored = await writer.client.delete(names.PODS, name, namespace)
                if being_deleted(stored):  # still there, terminating (else its last state)
                    controller.observe("Pod", stored)
                writer.recorder.event(pod, "Normal", "Stopped",
                                      "Deleted by kuota: its pod group's Workload was evicted")
        except ApiError as exc:
            if exc.conflict:  # the pod changed: its watch event syncs the group again
                writer.metrics.conflicts.inc()
                continue
            if exc.status == 422 and running is not None:
                placement_conflict(writer, workload, pod, exc.message)
                return
            if not exc.not_found:
                log.warning("pod %s/%s not updated: %s", namespace, name, exc)
                failed = exc  # the other pods first; then the writer queues the sync again
    if failed is not None:
        raise failed
