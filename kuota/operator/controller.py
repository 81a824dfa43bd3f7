"""The operator's state: watched objects in, engine calls and write requests out.

:class:`Controller` owns the :class:`~admission.engine.Engine` of the
replica that leads. Every watch event (kopf's, or one synthesised from a
response to our own write) goes through :meth:`Controller.observe`, which
keeps the newest body in :class:`~kuota.operator.objects.Objects` and, when
leading, translates it into engine calls:

* queue objects → ``engine.apply`` / ``engine.delete``. Each is checked
  with the API models first; a malformed one is *not* applied and its
  problem is kept (a ClusterQueue with a bad spec shows ``Active=False`` with
  that message) while every other object keeps working. Echoes of our own
  status writes change no spec and are skipped.
* Workloads → ``submit``, or — for one that already holds quota according to
  its ``status.admission`` — *restore*: counted in the cache exactly as
  admitted, without a decision. Finished, deactivated and deleted Workloads
  release their quota.
* Jobs → a Workload is created for each queue-labelled Job that is not
  being deleted; Job completion finishes the Workload; readiness feeds
  ``waitForPodsReady``; and the Job is started or stopped to match its
  Workload (see :mod:`kuota.operator.jobs`). A Job being deleted or gone has
  its Workload deleted by kuota — the garbage collector does not do it for a
  Job deleted with the default (orphan) propagation, and a foreground
  deletion removes the Workload while the Job is still there — and so does a
  Workload whose Job another one of the same name replaced, or that lost
  its owner reference.
* Evictions wait for the pods (the engine runs with ``wait_for_stop``): an
  Evicting workload keeps its quota until its Job is suspended with no
  active or terminating pod, or no pod of its group that kuota started is
  left; then :meth:`Controller.check_stopped` tells the engine.
* Nodes and Topologies → ``engine.topology`` (capacity, labels, levels) for
  topology-aware flavors; a malformed one is logged and skipped, and what was
  known of it is kept. A Workload restored from its status gets back the
  nodes its ``topologyAssignment`` names, so their capacity stays taken.
* Pods labelled ``kuota.dev/tas`` → kept per owner (Job or pod group); a gated
  one asks the writer to pin its owner's pods (:mod:`kuota.operator.ungater`).
* Pod groups → a Workload once enough *live* pods exist (terminating ones do
  not count); it finishes when its pods end, and is deleted when none is
  left alive (all gone or being deleted) outside an eviction.

:meth:`Controller.rebuild` builds a fresh engine from the objects when the
replica starts leading: topologies and nodes, configs, then every Workload
that holds quota, then the waiting ones — so usage is counted before any
cycle can admit.

No decision is made here; the engine makes them in cycles run by
:mod:`kuota.operator.loop`, and :mod:`kuota.operator.writer` writes them.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from admission.engine import Engine, Record
from kuota.operator import jobs, names, pinning, podgroups, status, topology, webhooks
from kuota.operator.objects import Objects, being_deleted, key_of, version_of
from kuota.operator.settings import Options
from quota import api, convert
from quota.lifecycle import State
from quota.resources import parse_amount
from quota.workload import Admission, PodSetAdmission, WorkloadInfo

if TYPE_CHECKING:
    from kuota.federation.federation import Federation

log = logging.getLogger(__name__)
Body = dict[str, Any]
#: Multi-cluster objects, handed to the federation controller.
FEDERATION_KINDS = ("MemberCluster", "MultiClusterConfig")
CONFIG_KINDS = tuple(r.kind for r in names.CONFIG_RESOURCES)
#: Workloads, Jobs and Pods a rebuild reads between two pauses (about 40 ms of Workloads).
REBUILD_SLICE = 500


class Actions(Protocol):
    """The writes ingestion asks for (implemented by :class:`kuota.operator.writer.Writer`)."""

    def create_workload(self, job_key: str) -> None: ...
    def sync_job(self, job_key: str) -> None: ...
    def create_group_workload(self, group_key: str) -> None: ...
    def sync_group(self, group_key: str) -> None: ...
    def workload_problem(self, key: str, message: str) -> None: ...
    def pods_ready(self, key: str) -> None: ...
    def adopt(self, key: str, admission: Admission) -> None: ...
    def ungate(self, owner: str) -> None: ...
    def delete_workload(self, key: str) -> None: ...


def epoch(stamp: str | None, default: float) -> float:
    if not stamp:
        return default
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


def admission_from_status(status: api.Admission, engine: Engine | None = None,
                          info: WorkloadInfo | None = None) -> Admission:
    """The core's Admission from a Workload's ``status.admission``.

    With ``engine`` and ``info``, a pod set's ``topologyAssignment`` is read back into
    the nodes and domains its pods take, so restoring it counts them again.
    """
    asked = {ps.name: ps.topology[1] for ps in info.pod_sets if ps.topology} if info else {}
    pod_sets = []
    for psa in status.pod_set_assignments:
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
    return Admission(status.cluster_queue, tuple(pod_sets))


class Controller:
    def __init__(self, options: Options, *, clock: Callable[[], float] = time.time) -> None:
        self.options = options
        self.clock = clock
        self.objects = Objects()
        self.engine: Engine | None = None
        self.actions: Actions | None = None
        #: ``Kind/key`` -> why the object is not used (its validation problems).
        self.problems: dict[str, str] = {}
        self.priority_classes: dict[str, int] = {}
        #: ``Kind/key`` -> the spec last applied to the engine.
        self._applied: dict[str, Any] = {}
        self.workload_of_job: dict[str, str] = {}
        self.job_of_workload: dict[str, str] = {}
        #: Pod groups: ``namespace/group`` -> its pods' keys, and its total count.
        self.group_pods: dict[str, set[str]] = {}
        self.group_sizes: dict[str, int] = {}
        self.workload_of_group: dict[str, str] = {}
        self.group_of_workload: dict[str, str] = {}
        #: Pods waiting for (or given) a topology domain: ``job:ns/name`` or
        #: ``group:ns/group`` -> the pods' keys.
        self.topology_pods: dict[str, set[str]] = {}
        #: Node name -> the node last handed to the engine (skip unchanged heartbeats).
        self._nodes: dict[str, Any] = {}
        #: Why a Workload finished, for its condition ("Succeeded" / "Failed").
        self.finish_reasons: dict[str, str] = {}
        #: Set when anything may let a cycle admit more; the loop waits on it.
        self.on_change: Callable[[], None] = lambda: None
        self.queues_dirty = True
        #: Multi-cluster dispatch (kuota.federation), when the operator runs it.
        self.federation: Federation | None = None
        #: While rebuilding: stops are checked after, and watch events are held (below).
        self._rebuilding = False
        #: Watch events that came while a rebuild was under way, ingested after it, in order.
        self._held: list[tuple[str, Body, bool, Body | None]] = []

    @property
    def leading(self) -> bool:
        return self.engine is not None and self.actions is not None

    def manages(self, namespace: str | None) -> bool:
        return not self.options.namespaces or (namespace or "") in self.options.namespaces

    # -- events in ---------------------------------------------------------------------------
    def observe(self, kind: str, body: Body, *, deleted: bool = False) -> None:
        """One watch event (or one answer to our own write) for a watched object."""
        previous = self.objects.get(kind, key_of(body))
        if deleted:
            old = self.objects.drop(kind, key_of(body), version_of(body))
            if old is None and self.objects.get(kind, key_of(body)) is not None:
                return  # a stale deletion of an object recreated since
        elif not self.objects.put(kind, body):
            return  # not newer than what we have
        if self.leading:
            if self._rebuilding:
                self._held.append((kind, body, deleted, previous))
            else:
                self._ingest(kind, body, deleted, previous)

    def _ingest(self, kind: str, body: Body, deleted: bool,
                previous: Body | None = None) -> None:
        try:
            if kind in CONFIG_KINDS:
                self._config(kind, body, deleted)
            elif kind == "WorkloadPriorityClass":
                self._priority_class(body, deleted)
            elif kind == "Namespace":
                self._namespace(body, deleted)
            elif kind == "Workload":
                self._workload(body, deleted, previous)
            elif kind == "Job":
                self._job(body, deleted)
            elif kind == "Pod":
                self._pod(body, deleted)
            elif kind == "Node":
                self._node(body, deleted)
            elif kind == "Topology":
                self._topology(body, deleted)
            elif kind in FEDERATION_KINDS and self.federation is not None:
                self.federation.observe(kind, body, deleted)
        except Exception:  # one bad object must never stop the operator
            log.exception("could not process %s %s", kind, key_of(body))

    def reconsider(self, key: str) -> None:
        """Our admission lost to one stored meanwhile (a previous leader's late write): if
        the Workload still waits in the engine, count the stored admission instead."""
        body = self.objects.get("Workload", key)
        record = self.engine.records.get(key) if self.engine is not None else None
        if body is not None and record is not None and record.state is State.PENDING \
                and _holds_quota(body):
            self._adopt(key, body, record)

    def rebuild(self, actions: Actions) -> Engine:
        """Start leading: a fresh engine from the objects, quota held counted before all else
        (all at once; :meth:`rebuilding` is the same in slices)."""
        for _ in self.rebuilding(actions):
            pass
        assert self.engine is not None
        return self.engine

    def rebuilding(self, actions: Actions, *, slice_size: int = REBUILD_SLICE) -> Iterator[None]:
        """:meth:`rebuild`, pausing after every ``slice_size`` Workloads, Jobs and Pods:
        whoever drives it lets other work run in between — the operator's event loop
        answers the webhook and the probes, where 50,000 Workloads read at once held them
        for 4 s. Watch events that come meanwhile are held and ingested at the end, in
        order, as if they had come just after it."""
        # Pods take time to stop: evicted workloads hold their quota until they have.
        self.engine = Engine(config=self.options.engine, wait_for_stop=True)
        self.actions = actions
        self._rebuilding = True
        self._held.clear()
        self.problems.clear()
        if self.federation is not None:
            self.federation.attach(self.engine)
        self._applied.clear()
        for index in (self.workload_of_job, self.job_of_workload, self.group_pods,
                      self.group_sizes, self.workload_of_group, self.group_of_workload,
                      self.topology_pods, self._nodes):
            index.clear()
        # Nodes and topologies first: restoring a placed workload counts its nodes.
        for kind in ("Topology", "Node"):
            for body in self.objects.all(kind):
                self._ingest(kind, body, False)
        for body in self.objects.all("Namespace"):
            self._namespace(body, False)
        for body in self.objects.all("WorkloadPriorityClass"):
            self._priority_class(body, False)
        with self.engine.configuring():  # (one rebuild for every queue object)
            for kind in CONFIG_KINDS:
                for body in self.objects.all(kind):
                    self._ingest(kind, body, False)
        workloads = list(self.objects.all("Workload"))
        workloads.sort(key=lambda b: not _holds_quota(b))
        owners = [("Job", body) for body in self.objects.all("Job")]
        owners += [("Pod", body) for body in self.objects.all("Pod")]
        for count, (kind, body) in enumerate([("Workload", b) for b in workloads] + owners, 1):
            self._ingest(kind, body, False)
            if count % slice_size == 0:
                yield
        self.engine.drain_outbox()  # restoring decides nothing: there is nothing to write
        self._rebuilding = False
        for key, record in list(self.engine.records.items()):
            if record.state is State.EVICTING:
                self.check_stopped(key)
        held, self._held = self._held, []
        for kind, body, deleted, previous in held:
            self._ingest(kind, body, deleted, previous)
        self.queues_dirty = True
        self.on_change()

    def stop_leading(self) -> None:
        self.engine = None
        self.actions = None
        self._rebuilding = False  # (a rebuild left half-way)
        self._held.clear()
        if self.federation is not None:
            self.federation.detach()

    # -- queue objects -----------------------------------------------------------------------
    def _config(self, kind: str, body: Body, deleted: bool) -> None:
        assert self.engine is not None
        key = key_of(body)
        ref = f"{kind}/{key}"
        if deleted:
            self.problems.pop(ref, None)
            if self._applied.pop(ref, None) is not None:
                self.engine.delete(kind, key)
            self._changed()
            return
        spec = body.get("spec")
        if ref in self._applied and self._applied[ref] == spec:
            return  # a status write, or a label: nothing the engine reads
        try:
            obj = api.parse_object(body, source="")
        except api.ObjectError as exc:
            self.problems[ref] = "; ".join(f"{p.field}: {p.message}" if p.field else p.message
                                           for p in exc.problems)
            log.warning("%s %s is invalid and not used: %s", kind, key, self.problems[ref])
            if self._applied.pop(ref, None) is not None:
                self.engine.delete(kind, key)
            self._changed()
            return
        self.problems.pop(ref, None)
        self.engine.apply(convert.config(obj))
        self._applied[ref] = spec
        self._changed()

    def _priority_class(self, body: Body, deleted: bool) -> None:
        name = key_of(body)
        if deleted:
            self.priority_classes.pop(name, None)
            return
        value = body.get("value")
        if isinstance(value, int) and not isinstance(value, bool):
            self.priority_classes[name] = value

    def _namespace(self, body: Body, deleted: bool) -> None:
        assert self.engine is not None
        if deleted:
            return
        name = key_of(body)
        labels = dict((body.get("metadata") or {}).get("labels") or {})
        if self.engine.cache.namespaces.get(name, {}) != {
                **labels, "kubernetes.io/metadata.name": name}:
            self.engine.set_namespace(name, labels)
            self._changed()

    # -- nodes and topologies ----------------------------------------------------------------
    def _node(self, body: Body, deleted: bool) -> None:
        """A Node's capacity and labels for topology-aware admission. A malformed one is
        logged and skipped: the engine keeps what it knew of that node."""
        assert self.engine is not None
        name = key_of(body)
        if deleted:
            if self._nodes.pop(name, None) is not None:
                self.engine.topology.delete_node(name)
                self._changed()
            return
        try:
            node = topology.node_from_body(body)
        except topology.NodeError as exc:
            self.problems[f"Node/{name}"] = str(exc)
            log.warning("Node %s is not used for topology (previous state kept): %s", name, exc)
            return
        self.problems.pop(f"Node/{name}", None)
        if self._nodes.get(name) == node:
            return  # a heartbeat or a status change admission does not read
        self._nodes[name] = node
        self.engine.topology.set_node(node)
        self._changed()

    def _topology(self, body: Body, deleted: bool) -> None:
        """A Topology's levels. A malformed one is logged and skipped (the previous kept)."""
        assert self.engine is not None
        name = key_of(body)
        ref = f"Topology/{name}"
        if deleted:
            self.problems.pop(ref, None)
            self._applied.pop(ref, None)
            self.engine.topology.delete_topology(name)
            self._changed()
            return
        spec = body.get("spec")
        if self._applied.get(ref) == spec:
            return
        try:
            levels = topology.topology_from_body(body)
        except api.ObjectError as exc:
            self.problems[ref] = "; ".join(f"{p.field}: {p.message}" if p.field else p.message
                                           for p in exc.problems)
            log.warning("Topology %s is invalid and not used (previous state kept): %s", name,
                        self.problems[ref])
            return
        self.problems.pop(ref, None)
        self.engine.topology.set_topology(levels)
        self._applied[ref] = spec
        self._changed()

    def _changed(self) -> None:
        self.queues_dirty = True
        self.on_change()

    # -- workloads ---------------------------------------------------------------------------
    def _workload(self, body: Body, deleted: bool, previous: Body | None = None) -> None:
        assert self.engine is not None and self.actions is not None
        key = key_of(body)
        meta = body.get("metadata") or {}
        if not self.manages(meta.get("namespace")):
            return
        job_key = names.owner_job_key(body.get("metadata") or {})
        group = (meta.get("labels") or {}).get(names.POD_GROUP_LABEL)
        group_key = f"{meta.get('namespace') or 'default'}/{group}" if group else None
        record = self.engine.records.get(key)
        now = self.clock()
        if deleted:
            if group_key is not None and self.workload_of_group.get(group_key) == key:
                del self.workload_of_group[group_key]
                self.group_of_workload.pop(key, None)
            if record is not None and record.state is not State.FINISHED:
                self.engine.finish(key, now, "the Workload was deleted")
            self.engine.records.pop(key, None)
            # (an orphaned Workload no longer names its Job: the index still does)
            indexed = self.job_of_workload.pop(key, None) or job_key
            if indexed is not None and self.workload_of_job.get(indexed) == key:
                del self.workload_of_job[indexed]
                if job_key is not None and not self._job_gone(body) \
                        and jobs.finished(self.objects.get("Job", job_key) or {}) is None:
                    self.actions.create_workload(job_key)  # deleted by hand: it needs one
            self._changed()
            return
        if self._job_gone(body):
            self.actions.delete_workload(key)
            if record is not None and record.state is not State.FINISHED:
                self.engine.finish(key, now, "its Job is gone or being deleted")
                self._changed()
            return
        if job_key is not None:
            self.workload_of_job[job_key] = key
            self.job_of_workload[key] = job_key
        if group_key is not None:
            self.workload_of_group[group_key] = key
            self.group_of_workload[key] = group_key
        conditions = {c.get("type"): c.get("status")
                      for c in (body.get("status") or {}).get("conditions") or []}
        active = (body.get("spec") or {}).get("active", True) is not False
        # Only a change of spec.active is a user's decision: an event written before the
        # engine deactivated a workload still says active, and must not undo it.
        was_active = previous is None or \
            (previous.get("spec") or {}).get("active", True) is not False
        if record is None or (record.state is State.FINISHED
                              and conditions.get("Finished") != "True"):
            # (an inactive one still holding quota is being stopped: it is counted until then)
            if conditions.get("Finished") != "True" and (active or _holds_quota(body)):
                self._new_workload(key, body)
        elif conditions.get("Finished") == "True" and record.state is not State.FINISHED:
            self.engine.finish(key, now, "the Workload was marked finished")
            self._changed()
        elif not active and record.state not in (State.INACTIVE, State.FINISHED) \
                and record.deactivation is None:  # (not already being deactivated)
            self.engine.deactivate(key, now, "InactiveWorkload", "spec.active is false")
            self._changed()
        elif active and not was_active and record.state in (State.INACTIVE, State.EVICTING):
            self.engine.activate(key, now)
            self._changed()
        elif record.state is State.QUOTA_RESERVED:
            self._check_verdicts(key, body, record)
        if job_key is not None:
            self.actions.sync_job(job_key)
        if group_key is not None:
            self.actions.sync_group(group_key)

    def forget_finished(self, key: str) -> None:
        """The Workload's ``Finished`` condition is stored: its record goes, as a restart
        would drop it (a rebuild reads no finished Workload). A long-running operator kept
        every Workload it ever finished until its Job was deleted — in memory, and walked by
        every status sync — though nothing decided on them anymore."""
        engine = self.engine
        record = engine.records.get(key) if engine is not None else None
        if engine is not None and record is not None and record.state is State.FINISHED:
            del engine.records[key]

    def _job_gone(self, body: Body) -> bool:
        """Whether a Workload stands for a Job that is gone or being deleted: its owner Job
        is not there (or another Job has its name now), or it was made for a Job (labelled
        with its uid) but lost its owner reference — the Job was deleted orphaning it."""
        meta = body.get("metadata") or {}
        owner = names.owner_job_key(meta)
        if owner is None:
            return bool((meta.get("labels") or {}).get(names.JOB_UID_LABEL))
        job = self.objects.get("Job", owner)
        return job is None or being_deleted(job) or \
            (job.get("metadata") or {}).get("uid") != names.job_owner_uid(meta)

    def check_stopped(self, key: str) -> None:
        """Tell the engine an Evicting workload's pods are gone, once they are: its Job is
        suspended with no active or terminating pod (or gone), or no pod of its group that
        kuota started is left."""
        engine = self.engine
        record = engine.records.get(key) if engine is not None else None
        if engine is None or record is None or record.state is not State.EVICTING \
                or self._rebuilding:
            return
        job_key, group_key = self.job_of_workload.get(key), self.group_of_workload.get(key)
        job = self.objects.get("Job", job_key) if job_key is not None else None
        if job is not None and not jobs.stopped(job):
            return
        if group_key is not None and not podgroups.stopped(self.pods_of(group_key)):
            return
        # (said each time: should quota ever be released early, the log shows what was seen)
        seen = f"Job {job_key} stopped" if job is not None else \
            f"no pod of group {group_key} runs" if group_key is not None else \
            f"its owner is gone (Job {job_key})" if job_key is not None else "it has no owner"
        log.info("Workload %s evicted and stopped (%s): its quota is released", key, seen)
        engine.stopped(key, self.clock())
        self._changed()

    def deactivate(self, key: str, reason: str, message: str) -> None:
        """Deactivate a workload for a reason found outside the engine (see
        :func:`kuota.operator.owners.placement_conflict`)."""
        if self.engine is not None and key in self.engine.records:
            self.engine.deactivate(key, self.clock(), reason, message)
            self._changed()

    def _check_verdicts(self, key: str, body: Body, record: Record) -> None:
        """Admission check controllers write their verdicts into ``status.admissionChecks``."""
        assert self.engine is not None
        for check in (body.get("status") or {}).get("admissionChecks") or []:
            name, state = check.get("name"), check.get("state")
            if name in record.checks and state in ("Ready", "Retry", "Rejected") \
                    and record.checks[name][0] != state \
                    and record.state is State.QUOTA_RESERVED:
                self.engine.set_check(key, name, state, self.clock(), check.get("message") or "")
                self._changed()

    def _new_workload(self, key: str, body: Body) -> None:
        assert self.engine is not None and self.actions is not None
        try:
            obj = api.parse_object(body, source="")
        except api.ObjectError as exc:
            message = "; ".join(str(p) for p in exc.problems)
            self.problems[f"Workload/{key}"] = message
            self.actions.workload_problem(key, message)
            return
        assert isinstance(obj, api.Workload)
        self.problems.pop(f"Workload/{key}", None)
        spec = obj.spec
        priority = spec.priority
        if priority is None:
            priority = self.priority_classes.get(spec.priority_class_name or "", 0)
        now = self.clock()
        created = epoch((body.get("metadata") or {}).get("creationTimestamp"), now)
        info = convert.workload(obj, priority=priority, created=created)
        admission = obj.status.admission
        if admission is not None and obj.has_quota_reservation:
            held = admission_from_status(admission, self.engine, info)
            state = State.ADMITTED if obj.is_admitted else State.QUOTA_RESERVED
            self._restore(info, held, created, state, obj)
            self.actions.adopt(key, held)
            # Evicted or deactivated while its pods were stopping: Evicting again, holding.
            evicted = obj.status.condition("Evicted")
            evicting = evicted is not None and evicted.status == "True"
            if not spec.active:
                self.engine.deactivate(key, now, "InactiveWorkload",
                                       evicted.message if evicted and evicting
                                       else "spec.active is false")
            elif evicted is not None and evicting:
                preempted = obj.status.condition("Preempted")
                detail = preempted.reason if preempted is not None and \
                    preempted.status == "True" else ""
                self.engine.evict(key, now, evicted.reason, detail, evicted.message)
        else:
            self.engine.submit(info)
        self._changed()

    def _adopt(self, key: str, body: Body, record: Record) -> None:
        """Count the admission in ``body``'s status for a waiting workload (no decision)."""
        assert self.actions is not None
        try:
            obj = api.parse_object(body, source="")
        except api.ObjectError:
            return
        assert isinstance(obj, api.Workload)
        if obj.status.admission is None:
            return
        held = admission_from_status(obj.status.admission, self.engine, record.info)
        log.warning("Workload %s holds quota written elsewhere; counting it", key)
        state = State.ADMITTED if obj.is_admitted else State.QUOTA_RESERVED
        self._restore(record.info, held, self.clock(), state, obj)
        self.actions.adopt(key, held)
        self._changed()
        if key in self.job_of_workload:
            self.actions.sync_job(self.job_of_workload[key])
        if key in self.group_of_workload:
            self.actions.sync_group(self.group_of_workload[key])

    def _restore(self, info: Any, admission: Admission, at: float, state: State,
                 obj: api.Workload) -> Record:
        """Re-enter a workload that holds quota: usage counted, no decision; one still
        waiting for admission checks keeps their stored states."""
        assert self.engine is not None
        checks = {c.name: (c.state, c.message) for c in obj.status.admission_checks}
        return self.engine.restore(info, admission, at, admitted=state is State.ADMITTED,
                                   checks=checks, now=self.clock())

    # -- jobs --------------------------------------------------------------------------------
    def job_queue(self, job: Body) -> str | None:
        return jobs.queue_of(job, default_queue=self.options.default_queue,
                             queue_exists=self.queue_exists)

    def queue_exists(self, namespace: str, name: str) -> bool:
        return self.objects.get("LocalQueue", f"{namespace}/{name}") is not None

    def job_managed(self, namespace: str, name: str) -> bool:
        """Whether kuota manages Job ``namespace/name`` (as far as this replica has seen)."""
        job = self.objects.get("Job", f"{namespace}/{name}")
        return job is not None and self.job_queue(job) is not None

    def _job(self, body: Body, deleted: bool) -> None:
        assert self.engine is not None and self.actions is not None
        key = key_of(body)
        if not self.manages((body.get("metadata") or {}).get("namespace")):
            return
        workload = self.workload_of_job.get(key)
        mine = self.objects.get("Workload", workload) if workload else None
        if workload is not None and mine is not None and self._job_gone(mine):
            # Deleted (or being deleted, or replaced by a Job of the same name): its
            # Workload goes now, whatever the deletion's propagation.
            self.actions.delete_workload(workload)
            if deleted or being_deleted(body):
                return
            del self.workload_of_job[key]  # replaced: the new Job gets its own
            self.job_of_workload.pop(workload, None)
            workload = None
        if deleted or being_deleted(body) or self.job_queue(body) is None:
            return
        if workload is None:
            if jobs.finished(body) is None:
                self.actions.create_workload(key)
                self.actions.sync_job(key)
            return
        record = self.engine.records.get(workload)
        if record is None:
            return
        ended = jobs.finished(body)
        if ended is not None and record.state is not State.FINISHED:
            self.finish_reasons[workload] = ended[0]
            self.engine.finish(workload, self.clock(), ended[1])
            self._changed()
            return
        if record.state is State.ADMITTED and not record.pods_ready and jobs.pods_ready(body):
            self.engine.pods_ready(workload, self.clock())
            self.actions.pods_ready(workload)
        self.check_stopped(workload)
        self.actions.sync_job(key)


    # -- pod groups ----------------------------------------------------------------------------
    def _pod(self, body: Body, deleted: bool) -> None:
        assert self.engine is not None and self.actions is not None
        meta = body.get("metadata") or {}
        if not self.manages(meta.get("namespace")):
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
        record = self.engine.records.get(workload) if workload else None
        if workload is None:
            if len(live) >= total:
                self.actions.create_group_workload(group_key)
            return
        if record is None or record.state is State.FINISHED:
            return
        ended = podgroups.outcome(pods, total)
        if ended is not None:
            log.info("Workload %s finished: %s", workload, ended[1])
            self.finish_reasons[workload] = ended[0]
            self.engine.finish(workload, self.clock(), ended[1])
            self._changed()
            return
        self.check_stopped(workload)
        if not live and record.state is not State.EVICTING:
            # Every pod is gone or being deleted, and not by an eviction of ours: the
            # group is no more. Its Workload goes (and its quota with it).
            self.actions.delete_workload(workload)
            return
        if record.state is State.ADMITTED and not record.pods_ready and len(live) >= total \
                and all(podgroups.ready(p) for p in live):
            self.engine.pods_ready(workload, self.clock())
            self.actions.pods_ready(workload)
        self.actions.sync_group(group_key)

    def _topology_pod(self, body: Body, deleted: bool, group_key: str | None) -> None:
        """A pod pinned (or to be pinned) to a topology domain: keep it with its owner's, and
        ask for its owner's gated pods to be given domains."""
        assert self.actions is not None
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
            self.actions.ungate(owner)

    def topology_pods_of(self, owner: str) -> list[Body]:
        pods = (self.objects.get("Pod", k) for k in self.topology_pods.get(owner, ()))
        return [p for p in pods if p is not None]

    def pods_of(self, group_key: str) -> list[Body]:
        pods = (self.objects.get("Pod", k) for k in self.group_pods.get(group_key, ()))
        return [p for p in pods if p is not None]


def _holds_quota(body: Body) -> bool:
    return bool((body.get("status") or {}).get("admission")) \
        and status.is_true(body, "QuotaReserved")
