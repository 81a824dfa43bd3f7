"""The objects Workloads stand for — Jobs, JobSets, pod groups — from watch events into the engine.

:class:`Owners` keeps which Workload stands for which object or pod group, and
turns the owners' events into engine calls (the writes they need are
:mod:`kuota.operator.owners`):

* A queue-labelled object of a suspendable kind (:mod:`kuota.operator.kinds`:
  a Job, a JobSet) that is not being deleted gets a Workload; its
  completion finishes the Workload; its readiness feeds ``waitForPodsReady``;
  and it is started or stopped to match its Workload. One being deleted or
  gone has its Workload deleted by kuota — the garbage collector does not do
  it for a Job deleted with the default (orphan) propagation, and a
  foreground deletion removes the Workload while the Job is still there —
  and so does a Workload whose Job another one of the same name replaced, or
  that lost its owner reference.
* A pod group gets a Workload once enough *live* pods exist (terminating ones
  do not count); it finishes by Kueue's rule (:func:`~kuota.operator.podgroups.outcome`:
  when enough pods succeeded, or when failed pods may not be replaced), and is
  deleted when every pod is gone or being deleted outside an eviction.
* Pods labelled ``kuota.dev/tas`` are kept per owner (Job or pod group); a
  gated one asks the writer to pin its owner's pods (:mod:`kuota.operator.ungater`).
* Evictions wait for the pods (the engine runs with ``wait_for_stop``): an
  Evicting workload keeps its quota until its Job is suspended with no
  active or terminating pod, or no pod of its group that kuota started is
  left; then :meth:`Owners.check_stopped` tells the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from kuota.operator import guard, kinds, names, pinning, webhooks
from kuota.operator.kinds import contract, podgroups
from kuota.operator.objects import Objects, being_deleted, key_of
from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Engine
    from kuota.operator.settings import Options
    from quota.workload import Admission

log = logging.getLogger(__name__)
Body = dict[str, Any]


class Actions(Protocol):
    """The writes ingestion asks for (implemented by :class:`kuota.operator.writer.Writer`)."""

    def create_workload(self, owner: str) -> None: ...
    def sync_owner(self, owner: str) -> None: ...
    def create_group_workload(self, group_key: str) -> None: ...
    def sync_group(self, group_key: str) -> None: ...
    def workload_problem(self, key: str, message: str) -> None: ...
    def pods_ready(self, key: str) -> None: ...
    def adopt(self, key: str, admission: Admission) -> None: ...
    def ungate(self, owner: str) -> None: ...
    def delete_workload(self, key: str) -> None: ...


class Host(Protocol):
    """What :class:`Owners` reads of the operator's state (its
    :class:`~kuota.operator.controller.Controller`), and the writes it asks for."""

    @property
    def objects(self) -> Objects: ...
    @property
    def engine(self) -> Engine | None: ...
    @property
    def actions(self) -> Actions | None: ...
    @property
    def options(self) -> Options: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def in_rebuild(self) -> bool: ...

    def manages(self, namespace: str | None) -> bool: ...
    def changed(self) -> None: ...

class Owners:
    """The Workload of each Job and pod group, and those owners' events."""

    def __init__(self, controller: Host) -> None:
        self.controller = controller
        #: Objects of the suspendable kinds (``Kind:namespace/name``, see
        #: :mod:`kuota.operator.kinds`) and their Workloads, both ways.
        self.workload_of_owner: dict[str, str] = {}
        self.owner_of_workload: dict[str, str] = {}
        #: Pod groups: ``namespace/group`` -> its pods' keys, and its total count.
        self.group_pods: dict[str, set[str]] = {}
        self.group_sizes: dict[str, int] = {}
        self.workload_of_group: dict[str, str] = {}
        self.group_of_workload: dict[str, str] = {}
        #: Pods waiting for (or given) a topology domain: ``job:ns/name`` or
        #: ``group:ns/group`` -> the pods' keys.
        self.topology_pods: dict[str, set[str]] = {}
        #: Why a Workload finished, for its condition ("Succeeded" / "Failed").
        self.finish_reasons: dict[str, str] = {}

    def clear(self) -> None:
        """Forget every index (leading anew: they are read again from the objects)."""
        for index in (self.workload_of_owner, self.owner_of_workload, self.group_pods,
                      self.group_sizes, self.workload_of_group, self.group_of_workload,
                      self.topology_pods):
            index.clear()

    # -- Workloads and their owners ----------------------------------------------------------
    def link(self, workload: str, owner: str | None, group_key: str | None) -> None:
        if owner is not None:
            self.workload_of_owner[owner] = workload
            self.owner_of_workload[workload] = owner
        if group_key is not None:
            self.workload_of_group[group_key] = workload
            self.group_of_workload[workload] = group_key

    def workload_deleted(self, workload: str, body: Body, owner: str | None,
                         group_key: str | None) -> None:
        """Unlink a deleted Workload from its owner; an owner whose Workload was deleted by
        hand, still there and not finished, gets a new one."""
        if group_key is not None and self.workload_of_group.get(group_key) == workload:
            del self.workload_of_group[group_key]
            self.group_of_workload.pop(workload, None)
            actions = self.controller.actions
            if actions is not None and group_key in self.group_sizes \
                    and podgroups.enough(self.pods_of(group_key), self.group_sizes[group_key]):
                # Replacements created while the old Workload was going: theirs now.
                actions.create_group_workload(group_key)
        # (an orphaned Workload no longer names its owner: the index still does)
        indexed = self.owner_of_workload.pop(workload, None) or owner
        if indexed is not None and self.workload_of_owner.get(indexed) == workload:
            del self.workload_of_owner[indexed]
            actions = self.controller.actions
            obj = self.object_of(owner) if owner is not None else None
            if owner is not None and obj is not None and actions is not None \
                    and not self.owner_gone(body) \
                    and kinds.KINDS[kinds.split_owner(owner)[0]].finished(obj) is None:
                actions.create_workload(owner)
                # A running one stops until its new Workload is admitted: deleting the
                # Workload is no way to run outside quota.
                actions.sync_owner(owner)

    def object_of(self, owner: str) -> Body | None:
        """The object an owner key names, as last seen (with the child it runs through, if
        its kind runs through one: :func:`~kuota.operator.kinds.contract.with_child`)."""
        kind, key = kinds.split_owner(owner)
        obj = self.controller.objects.get(kind, key)
        return self.with_child(kind, obj) if obj is not None else None

    def with_child(self, kind_name: str, obj: Body) -> Body:
        child_kind = kinds.KINDS[kind_name].runs_through
        if child_kind is None:
            return obj
        return contract.with_child(obj, self.controller.objects.get(child_kind, key_of(obj)))

    def job_of(self, workload: str) -> str | None:
        """``namespace/name`` of the Job a Workload stands for (None for other kinds)."""
        kind, key = kinds.split_owner(self.owner_of_workload.get(workload) or "")
        return key if kind == "Job" else None

    def owner_gone(self, body: Body) -> bool:
        """Whether a Workload stands for an object that is gone or being deleted: its owner
        is not there (or another object has its name now), or it was made for one (labelled
        with its uid) but lost its owner reference — its owner was deleted orphaning it."""
        meta = body.get("metadata") or {}
        owner = kinds.owner_of(meta)
        if owner is None:
            return bool((meta.get("labels") or {}).get(names.JOB_UID_LABEL))
        obj = self.object_of(owner)
        uids = {str(r.get("uid")) for r in meta.get("ownerReferences") or []}
        return obj is None or being_deleted(obj) or \
            str((obj.get("metadata") or {}).get("uid")) not in uids

    def sync(self, workload: str) -> None:
        """Ask for the owner of ``workload`` to be brought in line with it."""
        actions = self.controller.actions
        assert actions is not None
        if workload in self.owner_of_workload:
            actions.sync_owner(self.owner_of_workload[workload])
        if workload in self.group_of_workload:
            actions.sync_group(self.group_of_workload[workload])

    def check_stopped(self, key: str) -> None:
        """Tell the engine an Evicting workload's pods are gone, once they are: its Job is
        suspended with no active or terminating pod (or gone), or no pod of its group that
        kuota started is left."""
        controller = self.controller
        engine = controller.engine
        record = engine.records.get(key) if engine is not None else None
        if engine is None or record is None or record.state is not State.EVICTING \
                or controller.in_rebuild:
            return
        owner, group_key = self.owner_of_workload.get(key), self.group_of_workload.get(key)
        obj = self.object_of(owner) if owner is not None else None
        queued = kinds.KINDS[kinds.split_owner(owner)[0]] if owner is not None else None
        # Dispatched to a member, it runs there, not here: its status counts the member's
        # pods, and the federation deletes that copy (never two running: its failover
        # rules). Here it is stopped once it is suspended.
        dispatched = record.admission is not None and record.admission.cluster is not None
        if queued is not None and obj is not None and not (
                queued.suspended(obj) if dispatched else queued.stopped(obj)):
            return
        if group_key is not None and not podgroups.stopped(self.pods_of(group_key)):
            return
        # (said each time: should quota ever be released early, the log shows what was seen)
        kind, name = kinds.split_owner(owner or "")
        seen = f"{kind} {name} stopped" if obj is not None else \
            f"no pod of group {group_key} runs" if group_key is not None else \
            f"its owner is gone ({kind} {name})" if owner is not None else "it has no owner"
        log.info("Workload %s evicted and stopped (%s): its quota is released", key, seen)
        engine.stopped(key, controller.clock())
        controller.changed()

    # -- objects of the suspendable kinds ----------------------------------------------------
    def queue(self, obj: Body) -> str | None:
        """The LocalQueue of an object of a kind kuota queues; None if kuota leaves it alone
        — no queue, or a part of another object kuota queues (a JobSet's Jobs)."""
        if kinds.owner_of(obj.get("metadata") or {}) is not None:
            return None
        return contract.queue_of(obj, default_queue=self.controller.options.default_queue,
                                 queue_exists=self.queue_exists)

    def queue_exists(self, namespace: str, name: str) -> bool:
        return self.controller.objects.get("LocalQueue", f"{namespace}/{name}") is not None

    def job_managed(self, namespace: str, name: str) -> bool:
        """Whether kuota manages Job ``namespace/name`` (as far as this replica has seen)."""
        job = self.controller.objects.get("Job", f"{namespace}/{name}")
        return job is not None and self.queue(job) is not None

    def owner_event(self, kind_name: str, body: Body, deleted: bool) -> None:
        """A watch event of an object of a suspendable kind (a Job, a JobSet, ...)."""
        controller = self.controller
        engine, actions = controller.engine, controller.actions
        assert engine is not None and actions is not None
        kind = kinds.KINDS[kind_name]
        owner = kinds.owner_key(kind_name, key_of(body))
        if not controller.manages((body.get("metadata") or {}).get("namespace")):
            return
        parent = kinds.owner_of(body.get("metadata") or {})
        if parent is not None and kinds.KINDS[kinds.split_owner(parent)[0]].runs_through \
                == kind_name:
            # The child an object runs through (a TrainJob's JobSet): news of its parent,
            # whose pod sets and state it holds.
            parent_obj = self.object_of(parent)
            if parent_obj is not None:
                self.owner_event(kinds.split_owner(parent)[0], parent_obj, False)
            return
        body = self.with_child(kind_name, body)
        workload = self.workload_of_owner.get(owner)
        mine = controller.objects.get("Workload", workload) if workload else None
        if workload is not None and mine is not None and self.owner_gone(mine):
            # Deleted (or being deleted, or replaced by an object of the same name): its
            # Workload goes now, whatever the deletion's propagation.
            actions.delete_workload(workload)
            if deleted or being_deleted(body):
                return
            del self.workload_of_owner[owner]  # replaced: the new object gets its own
            self.owner_of_workload.pop(workload, None)
            workload = None
        if deleted or being_deleted(body) or self.queue(body) is None:
            return
        if workload is None:
            if kind.finished(body) is None:
                actions.create_workload(owner)
                actions.sync_owner(owner)
            return
        record = engine.records.get(workload)
        if record is None:
            return
        if mine is not None and record.state in (State.PENDING, State.INACTIVE) \
                and kind.suspended(body) and self._outdated(kind, body, mine):
            # It asks for something else now (edited while it waited): its Workload is made
            # anew, as Kueue does, so what is admitted is what will run.
            log.info("Workload %s: its %s now asks for other pod sets; made anew", workload,
                     kind_name)
            actions.delete_workload(workload)
            return
        ended = kind.finished(body)
        if ended is not None and record.state is not State.FINISHED:
            self.finish_reasons[workload] = ended[0]
            engine.finish(workload, controller.clock(), ended[1])
            controller.changed()
            return
        if record.state is State.ADMITTED and not record.pods_ready and kind.pods_ready(body):
            engine.pods_ready(workload, controller.clock())
            actions.pods_ready(workload)
        self.check_stopped(workload)
        actions.sync_owner(owner)

    @staticmethod
    def _outdated(kind: contract.WorkloadKind, body: Body, workload: Body) -> bool:
        """Whether an object's pod sets differ from its Workload's in what quota counts."""
        try:
            wanted = guard.shape(kind.pod_sets(body))
        except (ValueError, TypeError, AttributeError, KeyError):
            return False  # unreadable now: its Workload stays as it was made
        return wanted != guard.shape((workload.get("spec") or {}).get("podSets") or [])

    # -- pod groups --------------------------------------------------------------------------
    def pod(self, body: Body, deleted: bool) -> None:
        controller = self.controller
        engine, actions = controller.engine, controller.actions
        assert engine is not None and actions is not None
        meta = body.get("metadata") or {}
        if not controller.manages(meta.get("namespace")):
            return
        try:
            found = podgroups.group_of(body)
        except podgroups.GroupError as exc:
            log.warning("pod %s: %s", key_of(body), exc)
            return
        if names.TOPOLOGY_LABEL in (meta.get("labels") or {}):
            self._topology_pod(body, deleted, found[0] if found else None)
        if found is None or names.first_of(meta.get("labels"), names.QUEUE_LABELS) is None:
            return
        group_key, total = found
        members = self.group_pods.setdefault(group_key, set())
        if deleted:
            members.discard(key_of(body))
        else:
            members.add(key_of(body))
            self.group_sizes[group_key] = total
        pods = self.pods_of(group_key)
        live = [p for p in pods if podgroups.live(p)]
        workload = self.workload_of_group.get(group_key)
        record = engine.records.get(workload) if workload else None
        if workload is None:
            if podgroups.enough(pods, total):
                actions.create_group_workload(group_key)
            return
        if record is None or record.state is State.FINISHED:
            return
        ended = podgroups.outcome(pods, total)
        if ended is not None:
            log.info("Workload %s finished: %s", workload, ended[1])
            self.finish_reasons[workload] = ended[0]
            engine.finish(workload, controller.clock(), ended[1])
            controller.changed()
            return
        self.check_stopped(workload)
        if not any(not being_deleted(p) for p in pods) and record.state is not State.EVICTING:
            # Every pod is gone or being deleted, and not by an eviction of ours: the
            # group is no more. Its Workload goes (and its quota with it). (A failed pod
            # that is still there waits for its replacement: the group goes on.)
            actions.delete_workload(workload)
            return
        if record.state is State.ADMITTED and not record.pods_ready and len(live) >= total \
                and all(podgroups.ready(p) for p in live):
            engine.pods_ready(workload, controller.clock())
            actions.pods_ready(workload)
        actions.sync_group(group_key)

    def _topology_pod(self, body: Body, deleted: bool, group_key: str | None) -> None:
        """A pod pinned (or to be pinned) to a topology domain: keep it with its owner's, and
        ask for its owner's gated pods to be given domains."""
        actions = self.controller.actions
        assert actions is not None
        namespace = (body.get("metadata") or {}).get("namespace") or "default"
        job = webhooks.job_of(body)
        if group_key is not None:
            owner = f"group:{group_key}"
        elif job is not None:
            owner = f"job:{namespace}/{job}"
        else:
            return
        members = self.topology_pods.setdefault(owner, set())
        if deleted:
            members.discard(key_of(body))
        else:
            members.add(key_of(body))
        if any(pinning.gated(p) for p in self.topology_pods_of(owner)):
            actions.ungate(owner)

    def topology_pods_of(self, owner: str) -> list[Body]:
        pods = (self.controller.objects.get("Pod", k) for k in self.topology_pods.get(owner, ()))
        return [p for p in pods if p is not None]

    def pods_of(self, group_key: str) -> list[Body]:
        pods = (self.controller.objects.get("Pod", k) for k in self.group_pods.get(group_key, ()))
        return [p for p in pods if p is not None]
