"""What Workloads stand for — Jobs and pod groups — created, started and stopped.

* A Job or a complete pod group without a Workload gets one (a 409
  AlreadyExists means another write won: the existing one is read).
* :func:`sync_job` / :func:`sync_group` bring the owner in line with its
  Workload: started (unsuspended / ungated, with the flavors' node labels
  and tolerations) only when the engine holds it *Admitted* and that very
  admission is stored in the Workload's status; stopped otherwise. A Job is
  stopped by suspending it and restoring its template; pods that kuota let
  run are deleted when their group is evicted (a pod cannot be gated
  again), and their replacements wait gated like the first ones.

Each write carries the resourceVersion it was computed from and is
recomputed after a 409. Other refusals are raised: the writer queues the
sync again after a backoff when they are transient.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kuota.operator import jobs, names, podgroups
from kuota.operator.client import ApiError
from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Record
    from kuota.operator.writer import Writer

log = logging.getLogger(__name__)
Body = dict[str, Any]


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def _priority(writer: Writer, labels: dict[str, str], owner: Body) -> tuple[int, str | None]:
    classes = writer.controller.priority_classes
    name = names.first_of(labels, names.PRIORITY_LABELS)
    if name and name not in classes:
        writer.event(owner, "Warning", "PriorityClassNotFound",
                     f"WorkloadPriorityClass {name} not found; using priority 0")
        return 0, None
    return classes.get(name or "", 0), name


async def _create(writer: Writer, manifest: Body, owner: Body) -> None:
    namespace = manifest["metadata"]["namespace"]
    try:
        created = await writer.client.create(names.WORKLOADS, manifest, namespace)
    except ApiError as exc:
        if exc.status != 409:
            writer.event(owner, "Warning", "WorkloadNotCreated", str(exc))
            raise
        created = await writer.client.get(names.WORKLOADS, manifest["metadata"]["name"],
                                          namespace)
    writer.controller.observe("Workload", created)


def admitted_record(writer: Writer, workload: str | None) -> Record | None:
    """The engine's record if it may run now: Admitted, and that admission is stored."""
    engine = writer.controller.engine
    record = engine.records.get(workload) if engine is not None and workload else None
    if record is None or record.state is not State.ADMITTED or record.admission is None:
        return None
    return record if writer.persisted.get(record.info.key) == record.admission else None


# -- Jobs ------------------------------------------------------------------------------------

async def create_job_workload(writer: Writer, job_key: str) -> None:
    controller = writer.controller
    job = controller.objects.get("Job", job_key)
    if job is None or job_key in controller.workload_of_job or controller.engine is None:
        return
    queue = controller.job_queue(job)
    if queue is None:
        return
    priority, priority_class = _priority(writer, (job.get("metadata") or {}).get("labels") or {},
                                         job)
    await _create(writer, jobs.workload_for(job, queue=queue, priority=priority,
                                            priority_class=priority_class), job)


def _job_patch(writer: Writer, job_key: str, job: Body) -> Body | None:
    controller = writer.controller
    engine = controller.engine
    workload = controller.workload_of_job.get(job_key)
    if engine is None or controller.job_queue(job) is None or jobs.finished(job) is not None:
        return None
    record = engine.records.get(workload) if workload else None
    if record is not None and record.state is State.FINISHED:
        return None
    running = admitted_record(writer, workload)
    if running is not None and running.admission is not None \
            and running.admission.cluster is None:  # dispatched: a copy runs in the member
        count = running.info.pod_sets[0].count if running.info.pod_sets else 0
        return jobs.start_patch(job, running.admission, engine.cache.flavors, count)
    return jobs.stop_patch(job)


async def sync_job(writer: Writer, job_key: str) -> None:
    controller = writer.controller
    namespace, name = _split(job_key)
    job = controller.objects.get("Job", job_key)
    for _ in range(controller.options.conflict_retries + 1):
        if job is None:
            return
        patch = _job_patch(writer, job_key, job)
        if patch is None:
            return
        patch.setdefault("metadata", {})["resourceVersion"] = \
            job["metadata"].get("resourceVersion")
        try:
            stored = await writer.client.patch(names.JOBS, name, patch, namespace)
        except ApiError as exc:
            if not exc.conflict:
                raise  # the writer queues the sync again if it may pass
            writer.metrics.conflicts.inc()
            job = await writer.client.find(names.JOBS, name, namespace)
            if job is not None:
                controller.observe("Job", job)
            continue
        controller.observe("Job", stored)
        started = patch["spec"].get("suspend") is False
        writer.event(stored, "Normal", "Started" if started else "Suspended",
                     "Admitted: the Job may run" if started
                     else "Suspended by kuota until its Workload is admitted")
        return


# -- pod groups ------------------------------------------------------------------------------

async def create_group_workload(writer: Writer, group_key: str) -> None:
    controller = writer.controller
    if group_key in controller.workload_of_group or controller.engine is None:
        return
    pods = [p for p in controller.pods_of(group_key) if not podgroups.terminal(p)]
    total = controller.group_sizes.get(group_key, 0)
    if not pods or len(pods) < total:
        return
    labels = (pods[0].get("metadata") or {}).get("labels") or {}
    queue = names.first_of(labels, names.QUEUE_LABELS)
    if queue is None:
        return
    priority, priority_class = _priority(writer, labels, pods[0])
    pods = sorted(pods, key=lambda p: p["metadata"]["name"])[:total]
    await _create(writer, podgroups.workload_for(group_key, pods, queue=queue,
                                                 priority=priority,
                                                 priority_class=priority_class), pods[0])


async def sync_group(writer: Writer, group_key: str) -> None:
    controller = writer.controller
    engine = controller.engine
    workload = controller.workload_of_group.get(group_key)
    record = engine.records.get(workload) if engine is not None and workload else None
    if engine is None or record is None or record.state is State.FINISHED:
        return
    running = admitted_record(writer, workload)
    failed: ApiError | None = None
    for pod in controller.pods_of(group_key):
        namespace, name = _split(f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}")
        try:
            if running is not None and running.admission is not None:
                patch = podgroups.start_patch(pod, running.admission, engine.cache.flavors)
                if patch is not None:
                    patch["metadata"]["resourceVersion"] = pod["metadata"]["resourceVersion"]
                    stored = await writer.client.patch(names.PODS, name, patch, namespace)
                    controller.observe("Pod", stored)
            elif not podgroups.gated(pod) and not podgroups.terminal(pod) and \
                    names.ADMISSION_ANNOTATION in (pod["metadata"].get("annotations") or {}):
                await writer.client.delete(names.PODS, name, namespace)
                writer.event(pod, "Normal", "Stopped",
                             "Deleted by kuota: its pod group's Workload was evicted")
        except ApiError as exc:
            if exc.conflict:  # the pod changed: its watch event syncs the group again
                writer.metrics.conflicts.inc()
                continue
            if not exc.not_found:
                log.warning("pod %s/%s not updated: %s", namespace, name, exc)
                failed = exc  # the other pods first; then the writer queues the sync again
    if failed is not None:
        raise failed
