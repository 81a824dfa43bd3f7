"""The operator's multi-cluster controller: members observed, copies made, followed and moved.

:class:`Federation` lives next to the operator's :class:`Controller` and runs
while the replica leads. It owns the engine's ``kuota.dev/multicluster``
check controller (a :class:`multicluster.controller.Dispatcher`, made anew on
every rebuild) and feeds it:

* **configs** — MultiClusterConfig objects (``set_config``);
* **members** — each Kubernetes MemberCluster is observed every
  ``member_interval`` seconds by an rq task (:mod:`.tasks`): its nodes, what
  others' pods request there (both followed by watches, :mod:`.member_watch`),
  and our copies. A success is a health check: the
  member becomes ``Active`` and ``dispatcher.set_member`` gets its nodes (plus
  what the dispatcher itself placed there); a failure makes it inactive with
  reason ``Unreachable``. The MemberCluster's status gets the condition,
  ``lastSeenTime``, the node count and capacity / free capacity per flavor.
  A pool member (``spec.pool``) is the pool of Redis workers registered in the
  operator's ``--redis`` and goes through the same calls
  (:mod:`.pool_member`); it carries the selector label ``kuota.dev/pool``, and
  a Job that cannot run on a pool (no ``command``) gets the hint
  ``!kuota.dev/pool`` so the ClusterAffinity filter keeps it off pools.

It carries decisions out, from the engine's events (:meth:`events`):

* **refuse** — a Job without ``spec.managedBy: kuota.dev/multicluster``
  (:mod:`.managed_by`) has its check Rejected, so its workload is deactivated
  with the reason, instead of being dispatched and fought over;
* **dispatch** — an ADMITTED event with ``admission.cluster`` makes the copy
  (:func:`.copies.build`) in that member, but only once every other member
  that may still hold a copy has confirmed its deletion or is lost
  (:func:`multicluster.failover.may_start`): never two running copies;
* **follow** — every observation copies the status of our copies home to the
  local Jobs and JobSets through their status subresource
  (:func:`.copies.status_patch`: a Job's rebuilt so that the API server accepts
  it); a finished copy finishes the local object and so its Workload, through
  the usual handling of its kind;
* **clean up** — a workload evicted, deactivated, finished or deleted has its
  copy deleted; any copy found for a workload not dispatched to that member
  (an orphan, a copy left on a member while it was lost) is deleted too
  (:mod:`.reconcile`);
* **give up on a refusing member** — a create that fails after its retries is
  tried again after a growing pause; after ``create_attempts`` failures the
  workload is evicted (``MemberRefused``) and the dispatcher excludes that
  member from its next decisions (:mod:`.create_failures`);
* **adopt after a restart** — workloads found admitted with ``clusterName``
  when the replica starts leading are dispatched already: each observation of
  their copy adopts its pods' per-node requests into the dispatcher
  (:meth:`Dispatcher.adopt`), so the member is counted as full as it is and
  the usage is freed when they end. The dispatcher is attached before the
  workloads are restored, so a restored reservation whose check is Pending is
  asked again and waits in the dispatcher until a member fits;
* **fail over** — a member not seen for its ``workerLostTimeout`` is lost: its
  workloads are evicted with reason ``ClusterLost`` and go through admission
  and dispatch again; the Health filter keeps them off the lost member. When it
  comes back it stays inactive (``DeletingStaleCopies``) until the copies it
  kept are gone.

The workload's status gets ``clusterName`` (with its admission) and
``dispatch`` — the decision with every member's scores and filter reasons.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from admission.engine import Engine
from admission.events import Kind, WorkloadEvent
from kuota.federation import (
    copies,
    managed_by,
    member_view,
    member_watch,
    pool_copy,
    pool_member,
    reconcile,
    remote_job,
    tasks,
)
from kuota.federation.create_failures import REFUSED, CreateFailures
from kuota.federation.member import Observation, refusal_of
from kuota.federation.member_view import Member
from kuota.operator import kinds, names, status
from kuota.operator.client import ApiError
from kuota.operator.objects import key_of
from multicluster import convert
from multicluster.controller import CONTROLLER_NAME, Dispatcher
from multicluster.failover import CLUSTER_LOST, MemberState, may_start, member_state, plan_failover
from multicluster.settings import SettingsError, timeouts_for
from quota import api
from quota.lifecycle import HOLDS_QUOTA, State
from quota.workload import WorkloadInfo

if TYPE_CHECKING:
    from kuota.operator.controller import Controller
    from kuota.operator.writer import Writer

log = logging.getLogger(__name__)
Body = dict[str, Any]

KINDS: Final = ("MemberCluster", "MultiClusterConfig")
_RELEASING: Final = (Kind.EVICTING, Kind.EVICTED, Kind.DEACTIVATED, Kind.FINISHED)


class Federation:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.options = controller.options
        self.origin = self.options.manager_id
        self.writer: Writer | None = None
        self.dispatcher: Dispatcher | None = None
        self.runner: tasks.TaskRunner | None = None
        self.members: dict[str, Member] = {}
        #: Workload key -> the member it is dispatched to (admitted there, not finished).
        self.wanted: dict[str, str] = {}
        #: Workload key -> members that may hold a copy of it (until deletion is confirmed).
        self.holders: dict[str, set[str]] = {}
        #: (workload, member) whose copy's creation has been confirmed.
        self.created: set[tuple[str, str]] = set()
        #: Workloads found dispatched when this replica started leading (the dispatcher did
        #: not place them): their usage is adopted from each observation of their copy.
        self.adopted: set[str] = set()
        #: Creates that failed after their retries: when to try again, when to give up.
        self.failures = CreateFailures(backoff=self.options.create_backoff,
                                       attempts=self.options.create_attempts)
        #: Task key of a delete in flight -> (workload, member).
        self._deleting: dict[str, tuple[str, str]] = {}
        self._decisions_written: dict[str, Any] = {}
        #: Workload -> the Job version (resourceVersion) it could not be copied from: not
        #: tried again until the Job changes (see :meth:`_remote_body`).
        self._unbuildable: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- leadership --------------------------------------------------------------------------
    def attach(self, engine: Engine) -> None:
        """A new engine (the replica starts leading): a fresh dispatcher, fed from the objects."""
        dispatcher = Dispatcher(flavors=lambda: engine.cache.flavors,
                                assign=engine.assign_cluster, annotations=self._annotations,
                                refuse=self._refusal)
        engine.controllers[CONTROLLER_NAME] = dispatcher
        self.dispatcher = dispatcher
        self.members.clear()
        self.wanted.clear()
        self.created.clear()
        self.adopted.clear()
        self.failures = CreateFailures(backoff=self.options.create_backoff,
                                       attempts=self.options.create_attempts)
        self._decisions_written.clear()
        self._unbuildable.clear()
        # run() stopped the previous runner: deletes still in flight then never report
        # back, and a stale entry would keep its member in ``holders`` for good. ``holders``
        # itself is kept: it is what is known of copies that may still exist, and each
        # member's next observation drops what it no longer lists.
        self._deleting.clear()
        objects = self.controller.objects
        for body in objects.all("MultiClusterConfig"):
            self._config(body, False)
        for body in objects.all("MemberCluster"):
            self._member(body, False)
        for body in objects.all("Workload"):
            cluster = (body.get("status") or {}).get("clusterName")
            if cluster and status.is_true(body, "Admitted") \
                    and not status.is_true(body, "Finished"):
                key = key_of(body)
                self.wanted[key] = cluster
                self.adopted.add(key)
                self.holders.setdefault(key, set()).add(cluster)

    def detach(self) -> None:
        self.dispatcher = None
        self.writer = None

    async def run(self, writer: Writer) -> None:
        """The federation loop, while leading: collect task outcomes, observe, dispatch,
        fail over, retry waiting checks, write statuses."""
        self.writer = writer
        try:
            while True:
                try:
                    await self.tick()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("multi-cluster tick failed")
                await asyncio.sleep(self.options.federation_tick)
        finally:
            runner, self.runner = self.runner, None
            if runner is not None:
                await asyncio.to_thread(runner.stop)
            # the members' watches serve this leadership only; a new one lists afresh
            await asyncio.to_thread(member_watch.close_all)

    # -- objects in --------------------------------------------------------------------------
    def observe(self, kind: str, body: Body, deleted: bool) -> None:
        if kind == "MultiClusterConfig":
            self._config(body, deleted)
        elif kind == "MemberCluster":
            self._member(body, deleted)
        self.controller.on_change()

    def _config(self, body: Body, deleted: bool) -> None:
        if self.dispatcher is None:
            return
        name = key_of(body)
        if deleted:
            self.dispatcher.delete_config(name)
            return
        try:
            obj = api.parse_object(body, source="")
            assert isinstance(obj, api.MultiClusterConfig)
            self.dispatcher.set_config(obj)
        except (api.ObjectError, SettingsError) as exc:
            self.controller.problems[f"MultiClusterConfig/{name}"] = str(exc)
            self.dispatcher.delete_config(name)
            log.warning("MultiClusterConfig %s is invalid and not used: %s", name, exc)

    def _member(self, body: Body, deleted: bool) -> None:
        name = key_of(body)
        ref = f"MemberCluster/{name}"
        if deleted:
            self.controller.problems.pop(ref, None)
            self.members.pop(name, None)
            if self.dispatcher is not None:
                self.dispatcher.delete_member(name)
            return
        try:
            obj = api.parse_object(body, source="")
        except api.ObjectError as exc:
            self.controller.problems[ref] = str(exc)
            log.warning("MemberCluster %s is invalid and not used: %s", name, exc)
            self.members.pop(name, None)
            if self.dispatcher is not None:
                self.dispatcher.delete_member(name)
            return
        assert isinstance(obj, api.MemberCluster)
        self.controller.problems.pop(ref, None)
        member = self.members.get(name)
        if member is not None and member.obj.spec == obj.spec \
                and member.obj.metadata.labels == obj.metadata.labels:
            member.obj = obj  # our own status write, or nothing the dispatcher reads
            return
        if member is None:
            member = Member(obj)
            seen = obj.status.last_seen_time
            member.last_seen = convert.timestamp(seen) if seen else None
            self.members[name] = member
        else:
            member.obj, member.spec, member.due = obj, None, 0.0
        member.problem = None
        if obj.spec.pool and not self.options.redis_url:
            member.problem = ("a pool member needs the operator's --redis URL (the Redis its "
                              "workers register in)")
        self._publish(member)

    def _owner(self, workload: str) -> tuple[str, str] | None:
        """(kind, ``ns/name``) of the object a Workload stands for, if it is of a kind
        dispatch carries (:data:`.copies.DISPATCHED`)."""
        owner = self.controller.owners.owner_of_workload.get(workload)
        if owner is None:
            return None
        kind, key = kinds.split_owner(owner)
        return (kind, key) if kind in copies.DISPATCHED else None

    def _object(self, workload: str) -> Body | None:
        owner = self._owner(workload)
        return None if owner is None else self.controller.objects.get(*owner)

    def _annotations(self, info: WorkloadInfo) -> Mapping[str, str]:
        return pool_copy.dispatch_hints(self.controller.objects.get("Workload", info.key),
                                        self._object(info.key))

    def _refusal(self, info: WorkloadInfo) -> str | None:
        """Why a workload cannot be dispatched: what it stands for is not managed by kuota."""
        obj = self._object(info.key)
        return None if obj is None else managed_by.refusal(obj)

    # -- engine events in --------------------------------------------------------------------
    def events(self, events: list[WorkloadEvent]) -> None:
        """The engine's events of one round of cycles (before the writer persists them)."""
        if self.dispatcher is None:
            return
        for event in events:
            key = event.key
            if event.kind is Kind.ADMITTED and event.admission is not None \
                    and event.admission.cluster:
                self.wanted[key] = event.admission.cluster
                self.adopted.discard(key)
            elif event.kind in _RELEASING:
                self.adopted.discard(key)
                if event.kind is Kind.FINISHED:
                    # finished or deleted: nothing of it is needed any more (its decision
                    # is in the Workload's status already)
                    self.dispatcher.forget(key)
                    self.failures.forget(key)
                    self._decisions_written.pop(key, None)
                    self._forget_unbuildable(key)
                    if not self.holders.get(key, True):
                        del self.holders[key]
                else:
                    self.dispatcher.released(key)
                if self.wanted.pop(key, None) is not None:
                    self._delete_everywhere(key)

    def _delete_everywhere(self, key: str) -> None:
        workload = self.controller.objects.get("Workload", key) or {}
        owner = self._owner(key)
        if owner is None:  # (no longer indexed: its owner reference says)
            found = kinds.owner_of(workload.get("metadata") or {})
            owner = kinds.split_owner(found) if found else None
        for cluster in sorted(self.holders.get(key, ())):
            member = self.members.get(cluster)
            if member is not None and member.error is None and owner is not None:
                self._submit_delete(member, key, *owner)

    # -- the loop ----------------------------------------------------------------------------
    async def tick(self) -> None:
        engine, dispatcher = self.controller.engine, self.dispatcher
        if engine is None or dispatcher is None or not self.members:
            return
        if self.runner is None:
            self.runner = tasks.TaskRunner(tasks.connection(self.options.redis_url),
                                           queue=f"{tasks.QUEUE}-{self.origin}")
            self.runner.start()
        now = self.controller.clock()
        for outcome in self.runner.collect():
            self._outcome(outcome, now)
        for member in list(self.members.values()):
            if member.due <= now and not self.runner.busy(f"observe:{member.name}"):
                await self._observe(member, now)
        self._fail_over(engine, now)
        self._dispatch(engine, now)
        changed = False
        for verdict in dispatcher.poll(now):
            engine.set_check(verdict.key, verdict.check, verdict.state, now, verdict.message)
            changed = True
        if changed:
            self.controller.on_change()
        self._write_decisions()
        for member in self.members.values():
            self._write_member_status(member, now)

    async def _observe(self, member: Member, now: float) -> None:
        assert self.runner is not None
        member.due = now + self.options.member_interval
        pool = member.obj.spec.pool
        if pool and member.problem is None:
            assert self.options.redis_url is not None
            member.spec = pool_member.pool_spec(
                pool=pool, member=member.name, origin=self.origin,
                redis=self.options.redis_url, prefix=self.options.pool_prefix)
        elif pool:
            member.spec = None
        elif member.spec is None or now - member.spec_read > member_view.SECRET_REFRESH:
            try:
                client = self.writer.client if self.writer is not None else None
                member.spec = await member_view.kubeconfig_spec(
                    member.obj, client, self.options.operator_namespace)
                member.spec_read, member.problem = now, None
            except (ApiError, OSError, ValueError, KeyError) as exc:
                member.problem = f"kubeConfig: {exc}"
                member.spec = None
        if member.spec is None:
            member.error = member.problem
            member.condition = (False, reconcile.NOT_CONFIGURED, member.problem or "")
            self._publish(member)
            return
        self.runner.submit(f"observe:{member.name}", tasks.observe,
                           self.runner.reference(member.name, member.spec), self.origin,
                           retry=False, lane=member.name)

    def _outcome(self, outcome: tasks.Outcome, now: float) -> None:
        verb, _, rest = outcome.key.partition(":")
        cluster, _, target = rest.partition(":")
        member = self.members.get(cluster)
        if verb == "observe" and member is not None:
            if outcome.ok and isinstance(outcome.value, dict):
                self._observed(member, Observation.from_json(outcome.value), now)
            else:
                member.error = outcome.error or "the observation failed"
                member.condition = (False, reconcile.UNREACHABLE, member.error)
                self._publish(member)
        elif verb == "create":
            why = outcome.error if not outcome.ok else refusal_of(outcome.value)
            if why is None:
                self.created.add((target, cluster))
                self.failures.succeeded(target, cluster)
            else:
                self._create_failed(target, cluster, why, now)
        elif verb == "delete":
            workload, _ = self._deleting.pop(outcome.key, ("", ""))
            if outcome.ok:
                self._not_held(workload, cluster)
                self.created.discard((workload, cluster))
            else:
                log.warning("copy %s not deleted in %s: %s", target, cluster, outcome.error)

    def _create_failed(self, workload: str, cluster: str, error: str, now: float) -> None:
        """A create failed for good (retries spent, or refused): back off, and after the
        allowed attempts evict the workload and keep it off that member."""
        refusal = self.failures.failed(workload, cluster, error, now)
        if refusal is None:
            log.warning("copy of %s not created in %s (failure %d of %d, next try in %.1fs): "
                        "%s", workload, cluster, self.failures.failures(workload, cluster),
                        self.failures.attempts,
                        self.failures.delay(self.failures.failures(workload, cluster)), error)
            return
        engine, dispatcher = self.controller.engine, self.dispatcher
        record = engine.records.get(workload) if engine is not None else None
        if engine is None or dispatcher is None or record is None \
                or record.state not in HOLDS_QUOTA or self.wanted.get(workload) != cluster:
            return  # it left the member meanwhile
        log.warning("workload %s: %s", workload, refusal.message)
        dispatcher.exclude(workload, cluster, refusal.message)
        engine.evict(workload, now, REFUSED, "", refusal.message)
        self.controller.on_change()

    def _observed(self, member: Member, seen: Observation, now: float) -> None:
        assert self.runner is not None
        name = member.name
        member.last_seen, member.error, member.nodes = now, None, seen.nodes
        for problem in seen.problems:
            log.warning("member %s: %s", name, problem)
        creating = {w for w, m in self.wanted.items()
                    if m == name and self.runner.busy(f"create:{name}:{w}")}
        plan = reconcile.reconcile(name, seen.copies, self.wanted, creating=creating)
        listed = {c.workload for c in seen.copies}
        deleting = set(self._deleting.values())
        for workload, where in list(self.holders.items()):
            if name in where and workload not in listed and workload not in creating \
                    and (workload, name) not in deleting:
                self._not_held(workload, name)
        for found in seen.copies:
            self.holders.setdefault(found.workload, set()).add(name)
        for workload in plan.create:
            self.created.discard((workload, name))
        for found in plan.follow:
            if self.wanted.get(found.workload) == name:
                self.created.add((found.workload, name))
                if found.workload in self.adopted and self.dispatcher is not None:
                    # dispatched by an earlier leader: count its pods as they are now
                    self.dispatcher.adopt(found.workload, name, found.usage)
            self._follow(found.workload, found.body)
        for found in plan.delete:
            self._submit_delete(member, found.workload, found.kind, found.key)
        member.condition = reconcile.member_condition(error=None, recovering=member.recovering,
                                                      stale=len(plan.delete))
        if member.condition[0]:
            member.recovering = False
        self._publish(member)

    def _not_held(self, workload: str, member: str) -> None:
        """``member`` holds no copy of ``workload`` (any more)."""
        where = self.holders.get(workload)
        if where is None:
            return
        where.discard(member)
        if not where:
            del self.holders[workload]

    def _submit_delete(self, member: Member, workload: str, kind: str, copy_key: str) -> None:
        assert self.runner is not None and member.spec is not None
        namespace, _, name = copy_key.partition("/")
        key = f"delete:{member.name}:{copies.copy_key(kind, namespace, name)}"
        if self.runner.submit(key, tasks.delete, self.runner.reference(member.name, member.spec),
                              namespace, name, kind, lane=member.name):
            self._deleting[key] = (workload, member.name)

    def _follow(self, workload: str, remote: Body) -> None:
        """Copy a remote copy's progress onto the local object's status."""
        writer, owner = self.writer, self._owner(workload)
        obj = self.controller.objects.get(*owner) if owner is not None else None
        if writer is None or owner is None or obj is None:
            return
        kind, key = owner
        patch = copies.status_patch(obj, {**remote, "kind": kind},
                                    now=status.timestamp(self.controller.clock()))
        if patch is None:
            return
        namespace, name = obj["metadata"].get("namespace"), obj["metadata"]["name"]

        async def write() -> None:
            try:
                stored = await writer.client.patch(copies.DISPATCHED[kind], name, patch,
                                                   namespace, subresource="status")
            except ApiError as exc:
                log.warning("status of %s %s not copied from its member: %s", kind, key, exc)
                return
            self.controller.observe(kind, stored)

        self._spawn(write())

    def _publish(self, member: Member) -> None:
        """Give the dispatcher the member as now known (nodes, health, labels, prices)."""
        if self.dispatcher is None:
            return
        name = member.name
        added = [d.added for k, d in self.dispatcher.dispatched.items() if d.cluster == name]
        nodes = member.loaded = reconcile.with_dispatched(member.nodes, added)
        info = convert.cluster_info(member.obj, nodes)
        if member.obj.spec.pool:
            info = replace(info, labels={**info.labels,
                                         pool_copy.POOL_LABEL: member.obj.spec.pool})
        self.dispatcher.set_member(replace(info, health=member.health))

    def _timeouts(self, name: str) -> tuple[float, float]:
        assert self.dispatcher is not None
        return timeouts_for(self.dispatcher.configs.values(), name)

    def _state(self, name: str, now: float) -> MemberState:
        member = self.members.get(name)
        if member is None:
            return MemberState.LOST
        stale, lost = self._timeouts(name)
        return member_state(member.health, now, stale_after=stale, lost_after=lost)

    def _fail_over(self, engine: Engine, now: float) -> None:
        by_member: dict[str, dict[str, str]] = {}
        for workload, cluster in self.wanted.items():
            by_member.setdefault(cluster, {})[workload] = cluster
        moved = False
        for cluster, dispatched in sorted(by_member.items()):
            member = self.members.get(cluster)
            health = {} if member is None else {cluster: member.health}
            timeout = self._timeouts(cluster)[1]
            plan = plan_failover(dispatched, health, now, timeout=timeout)
            if not plan.moves:
                continue
            if member is not None:
                member.recovering = True
            for move in plan.moves:
                record = engine.records.get(move.workload)
                if record is None or record.state not in HOLDS_QUOTA:
                    self.wanted.pop(move.workload, None)
                    continue
                log.warning("workload %s: %s", move.workload, move.message)
                engine.evict(move.workload, now, CLUSTER_LOST, "", move.message)
                moved = True
        if moved:
            self.controller.on_change()

    def _dispatch(self, engine: Engine, now: float) -> None:
        """Create the copies that should exist and may start."""
        assert self.runner is not None
        for workload, cluster in sorted(self.wanted.items()):
            member = self.members.get(cluster)
            key = f"create:{cluster}:{workload}"
            if (workload, cluster) in self.created or member is None or member.spec is None \
                    or member.error is not None or self.runner.busy(key) \
                    or not self.failures.may_try(workload, cluster, now):
                continue
            others = {m: True for m in self.holders.get(workload, ()) if m != cluster}
            ok, why = may_start(cluster, others, {m: self._state(m, now) for m in others})
            if not ok:
                log.info("workload %s waits: %s", workload, why)
                continue
            body = self._remote_body(engine, workload, cluster)
            if body is None:
                continue
            reference = self.runner.reference(cluster, member.spec)
            if self.runner.submit(key, tasks.create, reference, body, lane=cluster):
                self.holders.setdefault(workload, set()).add(cluster)

    def _remote_body(self, engine: Engine, workload: str, cluster: str) -> Body | None:
        record = engine.records.get(workload)
        owner = self._owner(workload)
        obj = self.controller.objects.get(*owner) if owner is not None else None
        if record is None or record.state is not State.ADMITTED or record.admission is None \
                or owner is None or obj is None:
            return None  # (an Evicting workload keeps its admission until stopped)
        if self.writer is None or self.writer.persisted.get(workload) != record.admission:
            return None  # as for a local start: only once the admission is stored
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if self._unbuildable.get(workload) == version:
            return None  # the object has not changed since it could not be copied
        kind, key = owner
        try:
            body = copies.build({**obj, "kind": kind}, record.admission, engine.cache.flavors,
                                origin=self.origin, workload=workload, member=cluster)
        except remote_job.RemoteJobError as exc:
            # The object itself is at fault: every member would get the same answer, so
            # neither a retry nor an eviction (it would be admitted and fail again) helps.
            # Say so once, where problems are shown, and wait for it to change.
            self._unbuildable[workload] = version
            self.controller.problems[f"{kind}/{key}"] = f"cannot be dispatched: {exc}"
            log.warning("workload %s cannot be dispatched until its %s changes: %s",
                        workload, kind, exc)
            return None
        self._forget_unbuildable(workload)
        return body

    def _forget_unbuildable(self, workload: str) -> None:
        if self._unbuildable.pop(workload, None) is None:
            return
        owner = self._owner(workload)
        if owner is not None:
            self.controller.problems.pop("/".join(owner), None)

    # -- status writes -----------------------------------------------------------------------
    def _write_decisions(self) -> None:
        if self.dispatcher is None or self.writer is None:
            return
        for key, decision in list(self.dispatcher.decisions.items()):
            if self._decisions_written.get(key) is decision:
                continue
            if self.controller.objects.get("Workload", key) is None:
                continue  # not seen yet: written once it is
            self._decisions_written[key] = decision

            def build(body: Body, decision: Any = decision) -> Body | None:
                if (body.get("status") or {}).get("dispatch") == decision:
                    return None
                return {"status": {"dispatch": decision}}

            self.writer.write_status_later(key, build)

    def _write_member_status(self, member: Member, now: float) -> None:
        writer, engine = self.writer, self.controller.engine
        if writer is None or engine is None:
            return
        wanted = member_view.status_body(member, engine.cache.flavors, now)
        if wanted == member.written:
            return
        member.written = wanted
        client, name = writer.client, member.name

        async def write() -> None:
            try:
                stored = await client.patch(names.MEMBER_CLUSTERS, name, {"status": wanted},
                                            subresource="status")
            except ApiError as exc:
                log.warning("status of MemberCluster %s not written: %s", name, exc)
                member.written = {}
                return
            self.controller.observe("MemberCluster", stored)

        self._spawn(write())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


