"""The operator's state: watched objects in, engine calls and write requests out.

:class:`Controller` owns the :class:`~admission.engine.Engine` of the
replica that leads. Every watch event (kopf's, or one synthesised from a
response to our own write) goes through :meth:`Controller.observe`, which
keeps the newest body in :class:`~kuota.operator.objects.Objects` and, when
leading, translates it into engine calls:

* queue objects, priority classes, namespaces, nodes and topologies →
  :class:`~kuota.operator.configs.Configs` (a malformed one is not used, and
  its problem is kept in :attr:`Controller.problems`);
* Workloads → ``submit``, or — for one that already holds quota according to
  its ``status.admission`` — *restore* (:mod:`kuota.operator.restore`):
  counted in the cache exactly as admitted, without a decision. Finished,
  deactivated and deleted Workloads release their quota; admission check
  verdicts written into the status reach the engine;
* Jobs and pod groups → :class:`~kuota.operator.owner_events.Owners`, which
  also keeps which Workload stands for which owner, and tells the engine
  when an evicted workload's pods have stopped.

:meth:`Controller.rebuild` builds a fresh engine from the objects when the
replica starts leading: topologies and nodes, configs, then every Workload
that holds quota, then the waiting ones — so usage is counted before any
cycle can admit.

No decision is made here; the engine makes them in cycles run by
:mod:`kuota.operator.loop`, and :mod:`kuota.operator.writer` writes them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from admission.engine import Engine, Record
from kuota.operator import configs, kinds, names
from kuota.operator.configs import Configs
from kuota.operator.objects import Objects, key_of, version_of
from kuota.operator.owner_events import Actions, Owners
from kuota.operator.restore import admission_from_status, epoch, holds_quota
from kuota.operator.settings import Options
from quota import api, convert
from quota.lifecycle import State
from quota.workload import Admission

log = logging.getLogger(__name__)
Body = dict[str, Any]
#: Multi-cluster objects, handed to the federation controller.
FEDERATION_KINDS = ("MemberCluster", "MultiClusterConfig")
#: Workloads, Jobs and Pods a rebuild reads between two pauses (about 40 ms of Workloads).
REBUILD_SLICE = 500


class FederationHook(Protocol):
    """Multi-cluster dispatch as the controller drives it
    (:class:`kuota.federation.federation.Federation`)."""

    def observe(self, kind: str, body: Body, deleted: bool) -> None: ...
    def attach(self, engine: Engine) -> None: ...
    def detach(self) -> None: ...


class Controller:
    def __init__(self, options: Options, *, clock: Callable[[], float] = time.time) -> None:
        self.options = options
        self.clock = clock
        self.objects = Objects()
        self.engine: Engine | None = None
        self.actions: Actions | None = None
        #: ``Kind/key`` -> why the object is not used (its validation problems).
        self.problems: dict[str, str] = {}
        self.configs = Configs(self.problems, self.changed)
        self.owners = Owners(self)
        #: Set when anything may let a cycle admit more; the loop waits on it.
        self.on_change: Callable[[], None] = lambda: None
        #: Multi-cluster dispatch (kuota.federation), when the operator runs it.
        self.federation: FederationHook | None = None
        #: While rebuilding: stops are checked after, and watch events are held (below).
        self.in_rebuild = False
        #: Watch events that came while a rebuild was under way, ingested after it, in order.
        self._held: list[tuple[str, Body, bool, Body | None]] = []

    @property
    def leading(self) -> bool:
        return self.engine is not None and self.actions is not None

    def manages(self, namespace: str | None) -> bool:
        return not self.options.namespaces or (namespace or "") in self.options.namespaces

    def changed(self) -> None:
        """Something may let a cycle admit more."""
        self.on_change()

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
            if self.in_rebuild:
                self._held.append((kind, body, deleted, previous))
            else:
                self._ingest(kind, body, deleted, previous)

    def _ingest(self, kind: str, body: Body, deleted: bool,
                previous: Body | None = None) -> None:
        try:
            if kind in configs.KINDS:
                self.configs.ingest(kind, body, deleted)
            elif kind == "Workload":
                self._workload(body, deleted, previous)
            elif kind in kinds.KINDS:
                self.owners.owner_event(kind, body, deleted)
            elif kind == "Pod":
                self.owners.pod(body, deleted)
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
                and holds_quota(body):
            self._adopt(key, body, record)

    def rebuild(self, actions: Actions) -> Engine:
        """Start leading: a fresh engine from the objects, quota held counted before all else
        (all at once; :meth:`rebuilding` is the same in slices)."""
        for _ in self.rebuilding(actions):
            pass
        assert self.engine is not None
        return self.engine

    def rebuilding(self, actions: Actions, *, slice_size: int = REBUILD_SLICE) -> Iterator[None]:
        """:meth:`rebuild`, pausing after every ``slice_size`` objects read (queue objects,
        nodes and namespaces as well as Workloads, Jobs and Pods): whoever drives it lets
        other work run in between — the operator's event loop answers the webhook and the
        probes, where 50,000 Workloads read at once held them for 4 s, and 2,000 queue
        objects for half a second. Watch events that come meanwhile are held and ingested
        at the end, in order, as if they had come just after it."""
        # Pods take time to stop: evicted workloads hold their quota until they have.
        engine = self.engine = Engine(config=self.options.engine, wait_for_stop=True)
        self.actions = actions
        self.in_rebuild = True
        self._held.clear()
        self.problems.clear()
        if self.federation is not None:
            self.federation.attach(engine)
        self.configs.lead(engine)
        self.owners.clear()
        count = 0

        def listed(*kinds: str) -> list[tuple[str, Body]]:
            # (a list, made first: the watches update the object cache meanwhile)
            return [(kind, body) for kind in kinds for body in self.objects.all(kind)]

        def ingest(objects: list[tuple[str, Body]]) -> Iterator[None]:
            nonlocal count
            for kind, body in objects:
                self._ingest(kind, body, False)
                count += 1
                if count % slice_size == 0:
                    yield

        # Nodes and topologies first: restoring a placed workload counts its nodes.
        yield from ingest(listed("Topology", "Node", "Namespace", "WorkloadPriorityClass"))
        with engine.configuring():  # (one rebuild for every queue object)
            yield from ingest(listed(*configs.CONFIG_KINDS))
        # Then what holds quota, so that it is counted before anything waiting is queued.
        workloads = sorted(self.objects.all("Workload"), key=lambda b: not holds_quota(b))
        yield from ingest([("Workload", body) for body in workloads])
        yield from ingest(listed(*kinds.KINDS, "Pod"))
        engine.drain_outbox()  # restoring decides nothing: there is nothing to write
        self.in_rebuild = False
        for key, record in list(engine.records.items()):
            if record.state is State.EVICTING:
                self.owners.check_stopped(key)
        held, self._held = self._held, []
        for kind, body, deleted, previous in held:
            self._ingest(kind, body, deleted, previous)
        self.changed()

    def stop_leading(self) -> None:
        self.engine = None
        self.actions = None
        self.in_rebuild = False  # (a rebuild left half-way)
        self._held.clear()
        self.configs.lead(None)
        if self.federation is not None:
            self.federation.detach()

    # -- workloads ---------------------------------------------------------------------------
    def _workload(self, body: Body, deleted: bool, previous: Body | None = None) -> None:
        assert self.engine is not None and self.actions is not None
        key = key_of(body)
        meta = body.get("metadata") or {}
        if not self.manages(meta.get("namespace")):
            return
        owner = kinds.owner_of(meta)
        group = (meta.get("labels") or {}).get(names.POD_GROUP_LABEL)
        group_key = f"{meta.get('namespace') or 'default'}/{group}" if group else None
        record = self.engine.records.get(key)
        now = self.clock()
        if deleted:
            if record is not None and record.state is not State.FINISHED:
                self.engine.finish(key, now, "the Workload was deleted")
            self.engine.records.pop(key, None)
            self.owners.workload_deleted(key, body, owner, group_key)
            self.changed()
            return
        if self.owners.owner_gone(body):
            self.actions.delete_workload(key)
            if record is not None and record.state is not State.FINISHED:
                self.engine.finish(key, now, "its owner is gone or being deleted")
                self.changed()
            return
        self.owners.link(key, owner, group_key)
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
            if conditions.get("Finished") != "True" and (active or holds_quota(body)):
                self._new_workload(key, body)
        elif conditions.get("Finished") == "True" and record.state is not State.FINISHED:
            self.engine.finish(key, now, "the Workload was marked finished")
            self.changed()
        elif not active and record.state not in (State.INACTIVE, State.FINISHED) \
                and record.deactivation is None:  # (not already being deactivated)
            self.engine.deactivate(key, now, "InactiveWorkload", "spec.active is false")
            self.changed()
        elif active and not was_active and record.state in (State.INACTIVE, State.EVICTING):
            self.engine.activate(key, now)
            self.changed()
        elif record.state is State.QUOTA_RESERVED:
            self._check_verdicts(key, body, record)
        if record is not None and record.state is not State.FINISHED:
            self._limits(body, record)
        if owner is not None:
            self.actions.sync_owner(owner)
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

    def deactivate(self, key: str, reason: str, message: str) -> None:
        """Deactivate a workload for a reason found outside the engine (see
        :func:`kuota.operator.owners.placement_conflict`)."""
        if self.engine is not None and key in self.engine.records:
            self.engine.deactivate(key, self.clock(), reason, message)
            self.changed()

    def _limits(self, body: Body, record: Record) -> None:
        """A preemption gate opened (or one was added), or the maximum execution time
        changed: the engine queues the workload again with it."""
        assert self.engine is not None
        limit = (body.get("spec") or {}).get("maximumExecutionTimeSeconds")
        if not isinstance(limit, int) or isinstance(limit, bool):
            limit = None  # (the API server's schema refuses any other value)
        gated = preemption_gated(body)
        info = record.info
        if (gated, limit) != (info.preemption_gated, info.max_execution):
            self.engine.update(dataclasses.replace(info, preemption_gated=gated,
                                                   max_execution=limit))
            self.changed()

    def _check_verdicts(self, key: str, body: Body, record: Record) -> None:
        """Admission check controllers write their verdicts into ``status.admissionChecks``."""
        assert self.engine is not None
        for check in (body.get("status") or {}).get("admissionChecks") or []:
            name, state = check.get("name"), check.get("state")
            if name in record.checks and state in ("Ready", "Retry", "Rejected") \
                    and record.checks[name][0] != state \
                    and record.state is State.QUOTA_RESERVED:
                self.engine.set_check(key, name, state, self.clock(), check.get("message") or "")
                self.changed()

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
        ref = spec.priority_class_ref
        if priority is None and ref is not None and ref.kind == "WorkloadPriorityClass":
            priority = self.configs.priority_classes.get(ref.name, 0)
        now = self.clock()
        created = epoch((body.get("metadata") or {}).get("creationTimestamp"), now)
        info = convert.workload(obj, priority=priority or 0, created=created)
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
        self.changed()

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
        self.changed()
        self.owners.sync(key)

    def _restore(self, info: Any, admission: Admission, at: float, state: State,
                 obj: api.Workload) -> Record:
        """Re-enter a workload that holds quota: usage counted, no decision; one still
        waiting for admission checks keeps their stored states."""
        assert self.engine is not None
        checks = {c.name: (c.state, c.message) for c in obj.status.admission_checks}
        # Its time admitted counts from its Admitted condition (maximumExecutionTimeSeconds).
        admitted = obj.status.condition("Admitted")
        since = admitted.last_transition_time if admitted is not None else None
        return self.engine.restore(info, admission, at, admitted=state is State.ADMITTED,
                                   checks=checks, now=self.clock(),
                                   admitted_at=since.timestamp() if since else None)


def preemption_gated(body: Body) -> bool:
    """A gate of the Workload's ``spec.preemptionGates`` is not Open in its status (read
    from the body, as :attr:`quota.api.Workload.preemption_gated` does from the model)."""
    opened = {g.get("name") for g in (body.get("status") or {}).get("preemptionGates") or []
              if g.get("position") == "Open"}
    return any(g.get("name") not in opened
               for g in (body.get("spec") or {}).get("preemptionGates") or [])
