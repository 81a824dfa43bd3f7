"""The active scheduler: one engine, fed from Redis, its decisions written back.

A :class:`Leader` exists only while its scheduler holds the lease. It is
built from Redis (:mod:`kuota.service.rebuild`) and then advanced one
:meth:`~Leader.step` at a time — the real-time twin of the simulator's loop:

1. **Renew** the lease when a third of its TTL has passed.
2. **Read events** from the stream (blocking briefly when idle) and re-read
   each named workload from Redis; the engine follows what Redis says
   (submitted, cancelled, finished, requeued by a failed pod):
   :mod:`kuota.service.following`.
3. **Schedule**: run cycles until idle (or for at most ``Timing.cycle_budget``:
   a backlog is admitted in slices, each persisted before the next), retry
   workloads waiting for a member cluster, then persist the outbox
   (:mod:`kuota.service.decisions`) and the dispatch decisions. Topology-aware
   admission and multi-cluster dispatch see the pools' nodes
   (:mod:`kuota.service.topofeed`, :mod:`kuota.service.members`).
4. **Place** workloads dispatched here by a manager on their pool's nodes
   (:mod:`kuota.service.dispatched`; outside the engine: no queue, no quota), then
   admitted gangs on pool nodes — on the nodes admission pinned, in
   the pool dispatch chose (:mod:`kuota.service.pinning`) — and send their
   pods to the nodes' rq queues (:mod:`kuota.service.placing`,
   :mod:`kuota.service.jobs`).
5. **Watch nodes** every few seconds: declare silent nodes lost and evict
   what ran on them (``ClusterLost`` for a pool member with no node left,
   else ``NodeFailures``); re-read all workload states cheaply to catch
   anything an event did not say.
6. **Publish** why pending workloads wait.

Any :class:`~queueing.store.Fenced` answer, a config change, or a lost Redis
connection ends the leader; the service builds a new one from Redis.

**Quarantine.** A workload whose stored record or spec cannot be read, or
fails the submission checks, is set aside as ``Invalid`` (:meth:`Leader.quarantine`)
before it enters the engine. Work done for one workload — its cycle, its
reconciliation, its placement — runs under :func:`admission.errors.blame`, so
an error nobody foresaw is raised as ``WorkloadFailed`` naming it; the service
quarantines that workload and rebuilds (the engine may be half-way through a
change), and every other workload goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from admission.engine import Engine
from admission.errors import blame
from admission.events import WorkloadEvent
from kuota.service import decisions, jobs, pinning, placing, rebuild, topofeed
from kuota.service.connection import Connection
from kuota.service.decisions import Tracked
from kuota.service.dispatched import DispatchedWorkloads
from kuota.service.following import Follower
from kuota.service.following import NeedRebuild as NeedRebuild  # (the service catches it)
from kuota.service.intake import Intake
from kuota.service.members import CLUSTER_LOST, PoolMembers, wanted
from kuota.service.nodeview import NodeView
from kuota.service.stopping import Stops
from queueing.store import Fenced, PodPhase, PodRef, WorkloadRecord
from queueing.store.workloads import PlaceRequest, PodPlacement
from quota.config import EngineConfig
from quota.lifecycle import HOLDS_QUOTA, State
from quota.resources import format_vector
from quota.workload import Admission

log = logging.getLogger(__name__)

#: Live workloads whose pending reasons are looked over per second, at most.
REASONS_PER_SECOND = 20_000

#: Reason of a workload taken out of scheduling because no node can ever hold it.
INADMISSIBLE = "Inadmissible"


@dataclass(frozen=True)
class Timing:
    lease_ttl: float = 5.0
    node_timeout: float = 30.0
    #: Longest wait for events when idle.
    poll: float = 0.5
    #: How often pending reasons are written.
    reasons_every: float = 0.5
    #: How often every workload's state is compared with the engine's (and finished
    #: workloads past their retention are forgotten).
    resync_every: float = 30.0
    #: How long a finished workload (record, history, pods, logs) is kept in Redis;
    #: None keeps them forever.
    retain_finished: float | None = 7 * 24 * 3600.0
    #: Shortest time between two rounds: what arrives meanwhile is handled as one batch
    #: (one pipeline of decisions, one start job per node), which is what lets a busy
    #: scheduler keep up; it adds at most this much to any decision's latency.
    batch: float = 0.01
    #: Longest a step runs scheduling cycles before persisting them and reading events again.
    cycle_budget: float = 0.05
    #: Longest a step follows events (in slices of
    #: :data:`~kuota.service.following.FOLLOW_SLICE`) before deciding;
    #: the rest is read again by the next step.
    follow_budget: float = 0.2

    @property
    def node_check_every(self) -> float:
        return max(0.05, min(self.node_timeout / 4, 5.0))

    @property
    def resend_after(self) -> float:
        """Pods still not started this long after being sent are sent again."""
        return max(1.0, self.node_timeout / 2)


class Leader:
    def __init__(self, conn: Connection, holder: str, *, timing: Timing,
                 config: EngineConfig, clock: Callable[[], float],
                 warm: tuple[rebuild.Loaded, str] | None = None) -> None:
        self.conn = conn
        self.store = conn.store
        self.holder = holder
        self.timing = timing
        self.clock = clock
        self.tracked: dict[str, Tracked] = {}
        #: Told every batch of engine events this leader persists (metrics).
        self.on_events: Callable[[Leader, Sequence[WorkloadEvent]], None] | None = None
        self.unplaced: dict[str, None] = {}
        self.recheck: set[str] = set()
        #: Workloads whose pods stop, holding their quota until they are gone.
        self.stops = Stops(self)
        #: The last step stopped its cycles with work left (see :meth:`_cycles`).
        self.busy = False
        self.nodes = NodeView(self.store)
        #: Workloads dispatched here by a manager: placed and run outside the engine.
        self.dispatched = DispatchedWorkloads(self)
        #: Placed workloads whose pods were sent but may not all have started -> when sent.
        self._sent_at: dict[str, float] = {}
        self._decisions = 0
        #: Unplaced gangs by kind (what they ask of nodes), in admission order.
        self._by_kind: dict[tuple[int, str], dict[str, None]] = {}
        self._kind_of: dict[str, tuple[int, str]] = {}
        #: Why the first gang of a kind did not fit, this round.
        self._waiting_why: dict[tuple[int, str], str] = {}
        self._reasons: dict[str, tuple[str, str]] = {}
        #: Workloads set aside because no node could ever hold them -> the Ready nodes then
        #: (names and epochs); given another chance when the nodes differ.
        self._inadmissible: dict[str, tuple[tuple[str, int, bool], ...] | None] = {}
        #: Kinds of gang found to fit these nodes were they empty (so they only wait).
        self._could_fit: dict[tuple[int, str], tuple[tuple[str, int, bool], ...]] = {}
        now = clock()
        self._renew_at = now + timing.lease_ttl / 3
        self._node_check_at = now
        self._reasons_at = now
        self._resync_at = now + timing.resync_every
        self._round_at = now
        self.store.workloads.index_namespaces()
        # A standby's copy (module standby), caught up after the lease was taken; or the
        # store read now, the stream followed from before the read: what happens during it
        # is seen twice, which re-reading makes harmless.
        if warm is not None:
            loaded, last_event = warm
        else:
            last_event = self.store.events.last_id()
            loaded = rebuild.load(self.store, config)
        #: Step 2: the events followed, the engine made to agree with Redis.
        self.follower = Follower(self, last_event)
        self.engine: Engine = loaded.engine
        self.intake = Intake(self.store, clock,
                             (key.partition("/")[0] for key in self.engine.cache.local_queues))
        # Topology-aware admission and multi-cluster dispatch to pools (issues 6 and 7).
        self.topology = topofeed.TopologyFeed(self.engine, loaded.configs.topologies)
        configs = loaded.configs
        self.members: PoolMembers | None = (
            PoolMembers(self.engine, configs.members, configs.multicluster_configs)
            if wanted(configs.objects, configs.members, configs.multicluster_configs) else None)
        for key, message in loaded.invalid.items():
            self.quarantine(key, message, now, loaded.workloads[key].pod_refs())
        self._resume([r for k, r in loaded.workloads.items() if k not in loaded.invalid], now)
        self._inadmissible = {k: None for k, r in loaded.workloads.items()
                              if r.state is State.INACTIVE and r.reason == INADMISSIBLE}
        self.dispatched.resume(list(loaded.dispatched.values()), now)
        self._read_nodes(now)
        if self.members is not None:
            # Reservations restored before the dispatcher was registered: ask it now.
            self.engine.ask_pending_checks(now)
            self._persist(now)
        self._renew_at = clock()  # loading may have taken a while: renew in the first step
        log.info("leading as %s: %d workloads, %d holding quota", holder,
                 len(self.engine.records), len(self.engine.cache.workloads))

    def next_decision_id(self) -> str:
        self._decisions += 1
        return f"{self.holder}#{self._decisions}"

    # -- the loop ----------------------------------------------------------------
    def step(self) -> None:
        now = self.clock()
        if now < self._round_at and not (self.busy or self.follower.behind):
            time.sleep(self._round_at - now)
            now = self.clock()
        self._round_at = now + self.timing.batch
        if now >= self._renew_at:
            self._renew(now)
        self.intake.step(now)
        events = self.store.events.read(self.follower.last_event, block_ms=self._block_ms(now))
        now = self.clock()
        self.follower.follow_some(events, now)
        if self._feeds_nodes() and (self.nodes.dirty or (
                self.members is not None and self.members.dispatcher.waiting
                and any(e.kind == "pod" for e in events))):
            self._read_nodes(now)
        self._schedule(now)
        self.dispatched.step(now)
        self._place(now)
        if self._inadmissible:
            self._retry_inadmissible(now)
        if now >= self._node_check_at:
            self._watch_nodes(now)
        if now >= self._reasons_at:
            self._publish_reasons(now)

    def _renew(self, now: float) -> None:
        lease = self.store.lease(self.holder.rpartition("|")[0], self.timing.lease_ttl)
        lease.holder = self.holder
        if not lease.renew():
            raise Fenced(f"lease of {self.holder} was lost")
        self._renew_at = now + self.timing.lease_ttl / 3

    def _block_ms(self, now: float) -> int:
        if self.recheck or self.stops.due or self.busy or self.follower.behind:
            return 1
        until = min(self._renew_at, self._node_check_at, now + self.timing.poll)
        wakeup = self.engine.next_wakeup()
        if wakeup is not None:
            until = min(until, wakeup)
        return max(1, int((until - now) * 1000))

    # -- 2. follow Redis (kuota.service.following): what it calls back ---------------
    def quarantine(self, key: str, message: str, now: float, pods: Iterable[PodRef] = ()) -> None:
        """Set a workload aside as Invalid (its pods asked to stop): a spec the scheduler
        cannot read or run, or one that made a step raise. It is never scheduled again."""
        status = self.store.workloads.quarantine(self.holder, key, message=message, now=now,
                                                 pods=pods)
        self._check(status, f"quarantining {key}")
        if status == "ok":
            log.error("workload %s set aside as Invalid: %s", key, message)

    def _forget(self, key: str) -> None:
        record = self.engine.records.get(key)
        if record is not None and record.state is State.FINISHED:
            del self.engine.records[key]  # a long-lived leader keeps only live workloads
        self.tracked.pop(key, None)
        self.unplaced.pop(key, None)
        self._reasons.pop(key, None)
        self.stops.forget(key)

    # -- 3. schedule -------------------------------------------------------------------
    def _schedule(self, now: float) -> None:
        self.stops.complete(now)
        self._cycles(now)
        if self.members is not None and self.members.retry(now):
            self._cycles(now)  # a Retry verdict requeues: it may fit elsewhere
        self._persist(now)
        if self.stops.complete(now):  # evictions with no pod left to wait for (never placed)
            self._cycles(now)
            self._persist(now)
        if self.members is not None:
            self._write_decisions()

    def _cycles(self, now: float) -> None:
        """Run scheduling cycles until none has anything to try, or the step's share of time
        is spent: then what was decided is persisted and the next step goes on at once. A
        backlog of thousands is thus admitted and written in slices — the first admissions
        reach Redis (and their pods their nodes) without waiting for the last decision,
        and no step keeps the lease unrenewed or the events unread for long."""
        deadline = time.monotonic() + self.timing.cycle_budget
        self.busy = False
        while self.engine.schedule(now).tried:
            if time.monotonic() >= deadline:
                self.busy = True
                return

    def _persist(self, now: float) -> None:
        events = self.engine.drain_outbox()
        if events:
            decisions.apply(self, events, now)
            if self.on_events is not None:
                self.on_events(self, events)
            if self.members is not None and self.members.observe(events):
                self.members.refresh(self.nodes, self.unplaced, now)

    def _write_decisions(self) -> None:
        """Dispatch decisions, on the workload records, for ``kuota why``."""
        assert self.members is not None
        attempts = {key: t.attempt for key, t in self.tracked.items()}
        unwritten = self.members.unwritten(attempts)
        if not unwritten:
            return
        for (key, _, _), status in zip(unwritten, self.store.workloads.set_dispatch(
                self.holder, unwritten), strict=True):
            self._check(status, f"storing the dispatch decision of {key}")
            if status != "ok":
                log.debug("dispatch decision of %s not stored (%s)", key, status)

    def _feeds_nodes(self) -> bool:
        """Do admission or dispatch need the nodes before scheduling (else they are read
        lazily, only when there is something to place)?"""
        return self.members is not None or self.topology.active

    def _read_nodes(self, now: float) -> None:
        """Read the nodes again and pass them on to topology-aware admission and dispatch."""
        if self.nodes.dirty:
            self.nodes.refresh()
        self.topology.sync(self.nodes)
        if self.members is not None:
            self.members.refresh(self.nodes, self.unplaced, now)

    # -- 4. place ----------------------------------------------------------------------
    def _place(self, now: float) -> None:
        if not self.unplaced:
            return
        pools = self.nodes.pools()
        requests: list[PlaceRequest] = []
        pods_of: dict[str, list[placing.GangPod]] = {}
        for key in [k for k in self.unplaced if k not in self._kind_of]:
            record = self.engine.records.get(key)
            if record is None or record.admission is None or key not in self.tracked:
                self.unplaced.pop(key)
                continue
            # Pinned nodes and a dispatched pool decide where a gang may go, too.
            where = pinning.placement_key(record.admission, self.members.pools()
                                          if self.members is not None else {})
            kind = (record.info.equivalence, repr(record.admission.flavor_summary()) + where)
            self._kind_of[key] = kind
            self._by_kind.setdefault(kind, {})[key] = None
        # Gangs of one kind (same pod sets, same flavors) fit or fail alike: each kind is
        # tried in admission order until one does not fit, so a backlog costs one failed
        # try per kind and round, not one per waiting gang.
        for kind, keys in list(self._by_kind.items()):
            for key in list(keys):
                if key not in self.unplaced:  # placed, evicted or finished meanwhile
                    del keys[key]
                    self._kind_of.pop(key, None)
                    continue
                record, tracked = self.engine.records[key], self.tracked[key]
                assert record.admission is not None
                with blame(key):
                    pods = placing.gang_pods(record.info, record.admission,
                                             self.engine.cache.flavors)
                    pool = (self.members.pool_for(record.admission)
                            if self.members is not None else None)
                    result = pinning.place(pods, record.admission, pools, pool=pool)
                if isinstance(result, placing.Unplaceable):
                    nodes_now = self._ready_nodes()
                    with blame(key):
                        # Judged once per kind and set of nodes: a gang that waits for busy
                        # nodes costs no second placement every round.
                        never = None if self._could_fit.get(kind) == nodes_now else \
                            self._never_fits(pods, record.admission, pool)
                    if never is None:
                        self._could_fit[kind] = nodes_now
                    if never is not None:  # waiting would hold its quota forever
                        log.warning("workload %s can never be placed: %s", key, never)
                        self.engine.deactivate(key, now, INADMISSIBLE, never)
                        self._inadmissible[key] = nodes_now
                        self.unplaced.pop(key, None)
                        del keys[key]
                        self._kind_of.pop(key, None)
                        continue
                    self._waiting_why[kind] = result.reason
                    break
                # Later gangs of this round see these pods on their nodes.
                self.nodes.update(result.updated)
                pools[result.pool] = [result.updated.get(n.name, n) for n in pools[result.pool]]
                pods_of[key] = pods
                requests.append(PlaceRequest(key, tracked.attempt, tuple(
                    PodPlacement(PodRef(key, tracked.attempt, p.index), node, p.pod_set,
                                 p.requests, self.nodes.epoch(node))
                    for p, node in zip(pods, result.nodes, strict=True))))
            else:
                self._waiting_why.pop(kind, None)
            if not keys:
                del self._by_kind[kind]
                self._could_fit.pop(kind, None)
        if not requests:
            return
        statuses = self.store.workloads.place_many(self.holder, requests, now)
        to_send: list[jobs.PodJob] = []
        for request, status in zip(requests, statuses, strict=True):
            self._check(status, f"placing {request.key}")
            if status.startswith("ok"):
                self.unplaced.pop(request.key, None)
                placed = tuple((p.node, p.epoch) for p in request.pods)
                self.tracked[request.key].placed = placed
                self.nodes.placed(request.pods)
                record = self.engine.records[request.key]
                record.pending_reason = record.pending_message = None
                with blame(request.key):
                    to_send += self._pod_jobs(request.key, request.attempt, placed,
                                              pods_of[request.key])
            else:  # a node went away, or the workload changed: look again
                log.info("placement of %s not stored (%s)", request.key, status)
                self.nodes.dirty = True
                if not status.startswith("node:"):
                    self.recheck.add(request.key)
        jobs.enqueue(self.conn.raw, self.store.keys, to_send)
        for job in to_send:
            self._sent_at[PodRef.parse(job.pod_id).workload] = now

    def _never_fits(self, pods: list[placing.GangPod], admission: Admission,
                    pool: str | None) -> str | None:
        """Why no Ready node could hold the gang even with nothing else on it, or None when
        it could (it waits) — or when that cannot be told yet: no node has registered, the
        pool dispatch chose has none, or topology-aware admission pinned its nodes."""
        empty = self.nodes.empty_pools()
        if not empty or (pool is not None and pool not in empty) or pinning.pinned(admission):
            return None
        if isinstance(pinning.place(pods, admission, empty, pool=pool), placing.Placed):
            return None
        shapes = "; ".join(
            f"pool {name}: " + ", ".join(f"{n.name} ({format_vector(n.allocatable)})"
                                         for n in sorted(nodes, key=lambda n: n.name)[:3])
            + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
            for name, nodes in sorted(empty.items()) if pool is None or name == pool)
        asks = "; ".join(sorted({f"{p.pod_set}: {format_vector(p.requests)} per pod"
                                 for p in pods}))
        return (f"no node can ever hold this gang of {len(pods)} pod(s) ({asks}), even with "
                f"nothing else running: the Ready nodes are {shapes}")

    def _ready_nodes(self) -> tuple[tuple[str, int, bool], ...]:
        """Which nodes there are to place on (a node that registers again, or is cordoned or
        uncordoned, changes it)."""
        return tuple(sorted((n.name, n.epoch, n.cordoned)
                            for n in self.nodes.records.values() if n.ready))

    def _retry_inadmissible(self, now: float) -> None:
        """Give gangs no node could hold another chance once the Ready nodes change (a
        bigger node may have registered): back to Pending, in their old place in line."""
        if self.nodes.dirty:
            self.nodes.refresh()
        nodes = self._ready_nodes()
        for key in [k for k, seen in self._inadmissible.items() if seen != nodes]:
            del self._inadmissible[key]
            record, tracked = self.engine.records.get(key), self.tracked.get(key)
            if record is None or record.state is not State.INACTIVE or tracked is None:
                continue
            status = self.store.workloads.settle(
                self.holder, WorkloadRecord(key, State.INACTIVE, attempt=tracked.attempt),
                event="activate", reason="Pending", message="nodes changed: trying again",
                queued_at=record.info.created, now=now)
            self._check(status, f"activating {key}")
            if status == "ok":
                self.engine.activate(key, now)
            else:
                self.recheck.add(key)

    def _pod_jobs(self, key: str, attempt: int, placed: tuple[tuple[str, int], ...],
                  pods: list[placing.GangPod]) -> list[jobs.PodJob]:
        obj = self.engine.records[key].info.source
        peers = tuple(node for node, _ in placed)
        out = []
        for pod, (node, epoch) in zip(pods, placed, strict=True):
            command, env = jobs.pod_command(obj, pod.pod_set)
            out.append(jobs.PodJob(self.store.prefix, PodRef(key, attempt, pod.index).id, node,
                                   epoch, len(placed), pod.pod_set, peers, command, env,
                                   pod.requests, jobs.working_dir(obj, pod.pod_set)))
        return out

    # -- 5. watch nodes -----------------------------------------------------------------
    def _watch_nodes(self, now: float) -> None:
        self._node_check_at = now + self.timing.node_check_every
        self.stops.wake_all()  # a pod event may have been missed
        redis_now = self.store.nodes.time()
        for node in self.store.nodes.all():
            if node.ready and redis_now - node.heartbeat > self.timing.node_timeout:
                status = self.store.nodes.expire(self.holder, node.name,
                                                 timeout=self.timing.node_timeout, now=now)
                self._check(status, f"expiring node {node.name}")
                if status == "ok":
                    log.warning("node %s lost: no heartbeat for %gs", node.name,
                                self.timing.node_timeout)
        self.nodes.refresh()
        self._read_nodes(now)
        self.dispatched.check_nodes(now)
        self._evict_from_lost_members(now)
        self._evict_from_lost_nodes(now)
        self._evict_from_drained_nodes(now)
        self._persist(now)
        self._sent_at = {k: at for k, at in self._sent_at.items() if k in self.tracked}
        self._resend([k for k, at in self._sent_at.items()
                      if now - at >= self.timing.resend_after], now)
        if self.store.events.missed(self.follower.last_event):
            raise NeedRebuild("events were trimmed before being read")
        if now >= self._resync_at:
            self._resync_at = now + self.timing.resync_every
            self._resync(now)

    def _evict_from_lost_members(self, now: float) -> None:
        """Requeue what holds quota on a pool member with no node left (ClusterLost), and
        admitted gangs pinned to nodes that are gone (NodeFailures): both wait to be
        admitted again elsewhere. Runs before the per-node check, so each is evicted once."""
        if self.members is not None:
            for key, message in self.members.lost().items():
                self.engine.evict(key, now, CLUSTER_LOST, "", message)
        for key, nodes in topofeed.lost_pins(self.engine, list(self.unplaced),
                                             self.nodes.records).items():
            self.engine.evict(key, now, "NodeFailures", "",
                              f"node(s) {', '.join(nodes)} chosen by topology-aware admission "
                              "were lost before the pods were placed")

    def _evict_from_lost_nodes(self, now: float) -> None:
        """Requeue gangs with a pod that was live on a node now gone (NodeFailures)."""
        suspects: list[tuple[str, list[PodRef]]] = []
        for key, tracked in self.tracked.items():
            record = self.engine.records.get(key)
            if record is None or record.state not in HOLDS_QUOTA:
                continue
            refs = [PodRef(key, tracked.attempt, i) for i, (node, epoch) in
                    enumerate(tracked.placed) if self.nodes.gone(node, epoch)]
            if refs:
                suspects.append((key, refs))
        if not suspects:
            return
        pods = self.store.pods.get_many([ref for _, refs in suspects for ref in refs])
        died = {p.ref: p.died_with_node for p in pods if p is not None}
        for key, refs in suspects:
            lost = [ref for ref in refs if died.get(ref, True)]
            if lost:
                nodes = ", ".join(sorted({self.tracked[key].placed[r.index][0] for r in lost}))
                self.engine.evict(key, now, "NodeFailures", "",
                                  f"node(s) {nodes} lost while running the workload")

    def _evict_from_drained_nodes(self, now: float) -> None:
        """Requeue the workloads with a live pod on a node being drained (``kuota node
        drain``): they run again on other nodes, the drained one being cordoned."""
        draining = sorted(n.name for n in self.nodes.records.values()
                          if n.ready and n.draining)
        if not draining:
            return
        for node, pod_ids in self.store.nodes.pod_ids(draining).items():
            for key in sorted({PodRef.parse(p).workload for p in pod_ids}):
                record = self.engine.records.get(key)
                if record is not None and record.state in HOLDS_QUOTA:
                    self.engine.evict(key, now, "NodeDrained", "",
                                      f"node {node} is being drained")

    def _resync(self, now: float) -> None:
        """Compare every stored state with the engine's; re-read those that differ. Forget
        workloads finished longer than the retention ago."""
        keys = self.store.workloads.keys()
        pipe = self.store.redis.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(self.store.keys.workload(key), "state", "attempt", "finished_at",
                       "origin")
        retain = self.timing.retain_finished
        expired: list[str] = []
        for key, (state, attempt, finished, origin) in zip(keys, pipe.execute(), strict=True):
            mine = self.engine.records.get(key)
            tracked = self.tracked.get(key)
            if state == State.INVALID and (mine is None or mine.state is State.FINISHED):
                continue  # set aside: kept, never scheduled, until cancelled
            if state == State.FINISHED and (mine is None or mine.state is State.FINISHED) \
                    and key not in self.dispatched.copies:
                # A dispatched copy is removed by its manager once it has seen the end: were
                # it forgotten first, the manager would find no copy and send it again.
                if retain is not None and not origin and finished \
                        and float(finished) < now - retain:
                    expired.append(key)
                continue
            if self.dispatched.knows(key, state, attempt):
                continue
            if mine is not None and state == mine.state and tracked is not None \
                    and str(tracked.attempt) == attempt:
                continue
            self.recheck.add(key)
        for start in range(0, len(expired), 200):
            assert retain is not None
            statuses = self.store.workloads.purge_finished(
                self.holder, expired[start:start + 200], before=now - retain)
            for status in statuses.values():
                self._check(status, "forgetting finished workloads")
            forgotten = sum(1 for s in statuses.values() if s == "ok:purged")
            if forgotten:
                log.info("forgot %d workload(s) finished more than %gs ago", forgotten, retain)

    # -- 6. publish reasons -------------------------------------------------------------
    def _publish_reasons(self, now: float) -> None:
        # Every live workload is looked at: with a backlog of tens of thousands, less often
        # (50,000: every 2.5 s), so that telling why does not slow down deciding.
        self._reasons_at = now + max(self.timing.reasons_every,
                                     len(self.engine.records) / REASONS_PER_SECOND)
        if self.members is not None:
            self.members.reasons()
        changed: list[tuple[str, int, str, str]] = []
        for key, record in self.engine.records.items():
            kind = self._kind_of.get(key)
            if kind is not None and kind in self._waiting_why and key in self.unplaced:
                record.pending_reason = "WaitingForNodes"
                record.pending_message = self._waiting_why[kind]
            if record.state is State.FINISHED or record.pending_reason is None:
                continue
            why = (record.pending_reason, record.pending_message or "")
            tracked = self.tracked.get(key)
            if tracked is None or self._reasons.get(key) == why:
                continue
            self._reasons[key] = why
            changed.append((key, tracked.attempt, *why))
        for start in range(0, len(changed), 500):
            self._check(self.store.workloads.set_reasons(self.holder, changed[start:start + 500]),
                        "publishing pending reasons")

    # -- resuming after a failover ----------------------------------------------------
    def _resume(self, records: list[WorkloadRecord], now: float) -> None:
        placed = [r for r in records if r.state in HOLDS_QUOTA and r.placement]
        pods = self.store.pods.get_many([ref for r in placed for ref in r.pod_refs()])
        by_ref = {p.ref: p for p in pods if p is not None}
        for record in records:
            self.tracked[record.key] = Tracked(record.attempt, record.pods)
            if record.state is State.EVICTING:
                self.stops.begin(record.key, record.attempt, record.pods)
        for record in sorted((r for r in records if r.state is State.ADMITTED
                              and not r.placement), key=lambda r: r.admitted_at or 0.0):
            self.unplaced[record.key] = None
        for record in placed:
            self.tracked[record.key].placed = tuple(
                (node, by_ref[ref].epoch if ref in by_ref else -1)
                for node, ref in zip(record.placement, record.pod_refs(), strict=False))
        # The previous leader may have stored placements it never sent.
        self._resend([r.key for r in placed], now)

    def _resend(self, keys: list[str], now: float) -> None:
        """Send again the start jobs of pods still Placed: a start job can be lost (a leader
        died between placing and sending, a worker died holding the job, Redis restarted).
        Starting a pod is a compare-and-set, so a pod sent twice still runs once."""
        refs = {key: [PodRef(key, t.attempt, i) for i in range(len(t.placed))]
                for key in keys if (t := self.tracked.get(key)) is not None and t.placed}
        for key in set(keys) - refs.keys():  # evicted or finished: nothing to send
            self._sent_at.pop(key, None)
        pods = self.store.pods.get_many([ref for rs in refs.values() for ref in rs])
        placed = {p.ref for p in pods if p is not None and p.state is PodPhase.PLACED}
        to_send: list[jobs.PodJob] = []
        for key, key_refs in refs.items():
            unsent = [i for i, ref in enumerate(key_refs) if ref in placed]
            record = self.engine.records.get(key)
            if not unsent or record is None or record.state is not State.ADMITTED \
                    or record.admission is None:
                self._sent_at.pop(key, None)
                continue
            tracked = self.tracked[key]
            with blame(key):
                gang = placing.gang_pods(record.info, record.admission,
                                         self.engine.cache.flavors)
                all_jobs = self._pod_jobs(key, tracked.attempt, tracked.placed, gang)
            to_send += [all_jobs[i] for i in unsent]
            self._sent_at[key] = now
        if to_send:
            log.info("sending %d pod(s) again that were placed but not started", len(to_send))
            jobs.enqueue(self.conn.raw, self.store.keys, to_send)

    @staticmethod
    def _check(status: str, what: str) -> None:
        if status == "fenced":
            raise Fenced(f"{what}: this scheduler no longer holds the lease")
