"""The active scheduler: one engine, fed from Redis, its decisions written back.

A :class:`Leader` exists only while its scheduler holds the lease. It is
built from Redis (:mod:`kuota.service.rebuild`) and then advanced one
:meth:`~Leader.step` at a time — the real-time twin of the simulator's loop:

1. **Renew** the lease when a third of its TTL has passed.
2. **Read events** from the stream (blocking briefly when idle) and re-read
   each named workload from Redis; the engine follows what Redis says
   (submitted, cancelled, finished, requeued by a failed pod):
   :mod:`kuota.service.following`.
3. **Schedule**: run cycles until idle, or until the step has tried
   ``Timing.cycle_heads`` heads or its next cycle would overrun
   ``Timing.cycle_budget`` (a backlog is admitted in slices, each persisted
   and placed before the next is decided, on the quota freed meanwhile), retry
   workloads waiting for a member cluster, then persist the outbox
   (:mod:`kuota.service.decisions`) and the dispatch decisions. Topology-aware
   admission and multi-cluster dispatch see the pools' nodes
   (:mod:`kuota.service.topofeed`, :mod:`kuota.service.members`).
4. **Place** workloads dispatched here by a manager on their pool's nodes
   (:mod:`kuota.service.dispatched`; outside the engine: no queue, no quota), then
   admitted gangs on pool nodes — on the nodes admission pinned, in
   the pool dispatch chose (:mod:`kuota.service.pinning`) — and send their
   pods to the nodes' rq queues (:mod:`kuota.service.placing`,
   :mod:`kuota.service.jobs`): :mod:`kuota.service.placer`.
5. **Watch nodes** every few seconds: declare silent nodes lost and evict
   what ran on them (``ClusterLost`` for a pool member with no node left,
   else ``NodeFailures``); every ``Timing.resync_every``, begin comparing the
   live workloads' stored states (and a window of the retained others) with the
   engine's, to catch anything an event did not say: a slice a step
   (:mod:`kuota.service.resync`).
6. **Publish** why pending workloads wait, a slice a step (:mod:`kuota.service.reasons`).
7. **Forget** the finished workloads past ``--retain-finished``, the oldest
   first, a slice a step.

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

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from admission.engine import Engine
from admission.events import WorkloadEvent
from kuota.service import decisions, rebuild, reconfig, topofeed
from kuota.service.connection import Connection
from kuota.service.decisions import Tracked
from kuota.service.dispatched import DispatchedWorkloads
from kuota.service.following import Follower
from kuota.service.following import NeedRebuild as NeedRebuild  # (the service catches it)
from kuota.service.intake import Intake
from kuota.service.laps import StepLaps
from kuota.service.members import CLUSTER_LOST, PoolMembers, wanted
from kuota.service.nodeview import NodeView
from kuota.service.placer import Placer
from kuota.service.reasons import PendingReasons
from kuota.service.resync import Resync
from kuota.service.stopping import Stops
from queueing.store import Fenced, NodeState, PodRef, WorkloadRecord
from queueing.store.events import READ_COUNT, Event
from queueing.store.objects import KINDS, problem_name
from quota.config import EngineConfig
from quota.lifecycle import HOLDS_QUOTA, State

log = logging.getLogger(__name__)

#: The Ready nodes, each with its incarnation (a node registering again is another).
Incarnations = frozenset[tuple[str, int]]

#: Finished workloads past their retention forgotten per step, at most (see
#: :meth:`Leader._expire`).
EXPIRE_SLICE = 500


@dataclass(frozen=True)
class Timing:
    lease_ttl: float = 5.0
    node_timeout: float = 30.0
    #: Longest wait for events when idle.
    poll: float = 0.5
    #: How often pending reasons are written.
    reasons_every: float = 0.5
    #: How often the live workloads' stored states are compared with the engine's, with
    #: a window of the others (:attr:`resync_window`).
    resync_every: float = 30.0
    #: Stored workloads a resync looks over besides the live ones, the window moving on
    #: at each resync: a store retaining millions of finished workloads costs each
    #: resync the same as a store of a few (a full pass takes more resyncs); 0: none.
    resync_window: int = 20_000
    #: How long a finished workload (record, history, pods, logs) is kept in Redis;
    #: None keeps them forever.
    retain_finished: float | None = 7 * 24 * 3600.0
    #: How often the finished workloads past their retention are looked for (a step
    #: forgets them at most :data:`EXPIRE_SLICE` at a time, and the next goes on).
    expire_every: float = 1.0
    #: How long a Lost node's record is kept (its worker gone: a pool whose workers come
    #: and go under new names would otherwise list every name it ever had); None keeps
    #: them until ``kuota node remove``.
    forget_lost_nodes: float | None = 24 * 3600.0
    #: Shortest time between two rounds: what arrives meanwhile is handled as one batch
    #: (one pipeline of decisions, one start job per node), which is what lets a busy
    #: scheduler keep up; it adds at most this much to any decision's latency.
    batch: float = 0.01
    #: Longest a step runs scheduling cycles before persisting them and reading events
    #: again; the first cycle always runs, and another only if it should end in time.
    cycle_budget: float = 0.05
    #: Heads a step's cycles try before it persists and places what they decided.
    cycle_heads: int = 500
    #: Longest one cycle nominates heads before it decides on those it has; the others
    #: wait for the next cycle, which nominates them first (None: a sixth of the lease,
    #: :attr:`nominating_most`).
    cycle_most: float | None = None
    #: After meeting a restarted Redis, how long a scheduler waits before leading again.
    #: A Redis that lost its last second may have lost placements whose pods run: their
    #: workers stop them at their next stop check (SIGTERM, then SIGKILL after their
    #: grace), and placing the same pods again before then would run them twice at once.
    #: The least wait: longer when a registered worker says its processes may outlive
    #: their pods longer (``NodeRecord.stops_within``). 0: no wait, for a Redis that
    #: never loses an acknowledged write (``appendfsync always``, no promoted replica).
    restart_pause: float = 6.0
    #: Longest a step follows events (in slices of
    #: :data:`~kuota.service.following.FOLLOW_SLICE`) before deciding;
    #: the rest is read again by the next step.
    follow_budget: float = 0.2

    @property
    def node_check_every(self) -> float:
        return max(0.05, min(self.node_timeout / 4, 5.0))

    @property
    def nominating_most(self) -> float:
        """How long one cycle nominates heads at most (:attr:`cycle_most`). A wave of
        preemptions over a thousand queues costs a victim search and evictions per head:
        in one cycle it held a step, and the events behind it, for 2 s on a slow host,
        more than the third of the lease a step should stay under. Cut at a sixth, the
        cycle (its decisions and evictions after the nominations) stays near a quarter.
        A cut delays the heads left for the next step, so it is kept for such waves: an
        ordinary cycle over a thousand queues nominates for a few tens of milliseconds."""
        return self.lease_ttl / 6 if self.cycle_most is None else self.cycle_most

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
        #: Where each step's time goes, stage by stage (the slow-step warning, the metrics).
        self.laps = StepLaps()
        #: Told every batch of engine events this leader persists (metrics).
        self.on_events: Callable[[Leader, Sequence[WorkloadEvent]], None] | None = None
        self.unplaced: dict[str, None] = {}
        #: The Ready nodes (name, incarnation) when placed gangs were last checked for lost
        #: nodes (:meth:`_evict_from_lost_nodes`), and unplaced gangs for lost pinned nodes
        #: (:meth:`_evict_from_lost_members`, which then need only check the gangs admitted
        #: since: :attr:`_pins_unchecked`).
        self._ready_checked: Incarnations | None = None
        self._pins_checked: Incarnations | None = None
        self._pins_unchecked: dict[str, None] = {}
        self.recheck: set[str] = set()
        #: Workloads whose pods stop, holding their quota until they are gone.
        self.stops = Stops(self)
        #: The last step stopped its cycles with work left (see :meth:`_cycles`).
        self.busy = False
        self.nodes = NodeView(self.store)
        #: Workloads dispatched here by a manager: placed and run outside the engine.
        self.dispatched = DispatchedWorkloads(self)
        #: Step 4: admitted gangs placed on nodes, their pods sent (and sent again).
        self.placer = Placer(self)
        self._decisions = 0
        now = clock()
        #: Step 6: why pending workloads wait, written to their records.
        self.reasons = PendingReasons(self, now)
        self._renew_at = now + timing.lease_ttl / 3
        self._node_check_at = now
        self._resync_at = now + timing.resync_every
        self.resync = Resync(self)
        self._expire_at = now
        self._round_at = now
        self.store.workloads.index_namespaces()
        self.store.indexes.build()
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
        #: The stored queue objects the engine was given (see :meth:`reconfigure`).
        self.configs = configs = loaded.configs
        self._name_config_problems()
        self.members: PoolMembers | None = (
            PoolMembers(self.engine, configs.members, configs.multicluster_configs)
            if wanted(configs.objects, configs.members, configs.multicluster_configs) else None)
        for key, message in loaded.invalid.items():
            self.quarantine(key, message, now, loaded.workloads[key].pod_refs())
        self._resume([r for k, r in loaded.workloads.items() if k not in loaded.invalid], now)
        self.placer.resume(loaded.workloads.values())
        self.dispatched.resume(list(loaded.dispatched.values()), now)
        self._read_nodes(now)
        if self.members is not None:
            # Reservations restored before the dispatcher was registered: ask it now.
            self.engine.ask_pending_checks(now)
            self._persist(now)
        self._renew_at = clock()  # loading may have taken a while: renew in the first step
        log.info("leading as %s: %d workloads, %d holding quota", holder,
                 len(self.engine.records), sum(1 for _ in self.engine.cache.all_holding()))

    def next_decision_id(self) -> str:
        self._decisions += 1
        return f"{self.holder}#{self._decisions}"

    def while_admitting(self) -> None:
        self.laps.lap("persist")
        self.placer.plan_ahead()
        self.laps.lap("place")

    def waits_for_nodes(self, key: str) -> None:
        self.placer.waits(key)
        self._pins_unchecked[key] = None

    # -- the loop ----------------------------------------------------------------
    def step(self) -> None:
        laps = self.laps
        laps.start()
        now = self.clock()
        if now < self._round_at and not (self.busy or self.follower.behind):
            time.sleep(self._round_at - now)
            now = self.clock()
        laps.lap("wait")
        self._round_at = now + self.timing.batch
        if now >= self._renew_at:
            self._renew(now)
        self.intake.step(now)
        laps.lap("lease and intake")
        events = self.store.events.read(self.follower.last_event, block_ms=self._block_ms(now),
                                       count=READ_COUNT)
        laps.lap("read")
        now = self.clock()
        self.follower.follow_some(events, now)
        laps.lap("follow")
        if self._feeds_nodes() and (self.nodes.dirty or (
                self.members is not None and self.members.dispatcher.waiting
                and any(e.kind == "pod" for e in events))):
            self._read_nodes(now)
            laps.lap("nodes")
        # Decisions and placements carry the time they are made: following a burst of
        # events can take a good part of a step (up to Timing.follow_budget).
        now = self.clock()
        self._schedule(now)
        self.dispatched.step(now)
        laps.lap("dispatch")
        now = self.clock()
        self.placer.step(now)
        laps.lap("place")
        if now >= self._node_check_at:
            self._watch_nodes(now)
            laps.lap("nodes")
        if self.resync.running:
            self.resync.step()
            laps.lap("resync")
        if self.reasons.due(now, self._catching_up(events)):
            self.reasons.step(now)
            laps.lap("reasons")
        if self.timing.retain_finished is not None and now >= self._expire_at:
            self._expire(now)
            laps.lap("expire")
        # What placing decided (a gang set aside, one given another chance) is written now:
        # the next step's follow mirrors Redis, and drops what the engine says meanwhile.
        self._persist(now)
        laps.end("persist")

    def _catching_up(self, events: Sequence[Event]) -> bool:
        """Are events left to read or follow (a burst)? Then what is only told to users, the
        pending reasons, waits (:mod:`kuota.service.reasons`)."""
        return self.follower.behind or len(events) >= READ_COUNT

    def reconfigure(self) -> None:
        """Queue objects changed (a ``config`` entry): the engine takes the difference in
        place (:mod:`kuota.service.reconfig`), or the leader is rebuilt."""
        configs = reconfig.read_again(self.store, self.engine, self.configs)
        if configs is None:
            raise NeedRebuild("queue objects changed")
        if reconfig.flavors(configs) != reconfig.flavors(self.configs):
            self.placer.flavors_changed()
            self.nodes.dirty = True  # (read again for topology-aware admission, if it is now)
        self.configs = configs
        self._name_config_problems()
        self.intake.namespaces = sorted({key.partition("/")[0]
                                         for key in self.engine.cache.local_queues})
        log.info("queue objects changed: taken in place")

    def _name_config_problems(self) -> None:
        """Name the stored queue objects and namespace labels that do not parse (skipped)
        in the quarantine hash, and forget those that read well again."""
        k = self.store.keys
        found = {}
        for ref, why in self.configs.problems.items():
            kind, _, name = ref.partition("/")
            found[problem_name(k.namespaces if kind == "Namespace" else k.objects(kind),
                               name)] = why
        hashes = (k.namespaces, *(k.objects(kind) for kind in KINDS))
        self.store.quarantine.sync(tuple(problem_name(key, "") for key in hashes), found)

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
        self.reasons.forget(key)
        self.stops.forget(key)

    # -- 3. schedule -------------------------------------------------------------------
    def _schedule(self, now: float) -> None:
        laps = self.laps
        self.stops.complete(now)
        self._cycles(now)
        if self.members is not None and self.members.retry(now):
            self._cycles(now)  # a Retry verdict requeues: it may fit elsewhere
        laps.lap("cycles")
        self._persist(now)
        laps.lap("persist")
        if self.stops.complete(now):  # evictions with no pod left to wait for (never placed)
            self._cycles(now)
            laps.lap("cycles")
            self._persist(now)
            laps.lap("persist")
        if self.members is not None:
            self._write_decisions()

    def _cycles(self, now: float) -> None:
        """Run scheduling cycles until none has anything to try, or the step has done its
        share (below): then what was decided is persisted and the next step goes on at once. A
        backlog of thousands is thus admitted and written in slices — the first admissions
        reach Redis (and their pods their nodes) without waiting for the last decision,
        and no step keeps the lease unrenewed or the events unread for long."""
        deadline = time.monotonic() + self.timing.cycle_budget
        self.busy = False
        tried = 0
        while True:
            began = time.monotonic()
            result = self.engine.schedule(
                now, enough=functools.partial(_past, began + self.timing.nominating_most))
            if not result.tried:
                return
            tried += result.tried
            # Another cycle only if this one tried every head, it should end within the
            # budget, judged by this one, and the step has tried fewer than cycle_heads
            # heads: a cycle over hundreds of queues is a batch already, and a second one
            # would decide on the quota known before this step, while pods have been ending
            # since. Its decisions are better persisted, placed and followed at once.
            ended = time.monotonic()
            if result.untried or tried >= self.timing.cycle_heads \
                    or ended + (ended - began) > deadline:
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

    # -- 5. watch nodes -----------------------------------------------------------------
    def _watch_nodes(self, now: float) -> None:
        self._node_check_at = now + self.timing.node_check_every
        self.stops.wake_all()  # a pod event may have been missed
        redis_now = self.store.nodes.time()
        records = self.store.nodes.all()
        changed = False
        for node in records:
            if node.ready and redis_now - node.heartbeat > self.timing.node_timeout:
                status = self.store.nodes.expire(self.holder, node.name,
                                                 timeout=self.timing.node_timeout, now=now)
                self._check(status, f"expiring node {node.name}")
                if status == "ok":
                    changed = True
                    log.warning("node %s lost: no heartbeat for %gs", node.name,
                                self.timing.node_timeout)
        changed = self._forget_lost_nodes(now) or changed
        # The records just read are the node view's, unless this check changed some (with
        # 2,000 nodes reading them all is a third of a check).
        self.nodes.refresh(None if changed else records)
        self._read_nodes(now)
        self.dispatched.check_nodes(now)
        ready = frozenset((n.name, n.epoch) for n in self.nodes.records.values() if n.ready)
        self._evict_from_lost_members(now, ready)
        self._evict_from_lost_nodes(now, ready)
        self._evict_from_drained_nodes(now)
        self._persist(now)
        self.placer.resend_overdue(now)
        if self.store.events.missed(self.follower.last_event):
            raise NeedRebuild("events were trimmed before being read")
        self._set_aside_wrong_types()
        if now >= self._resync_at and not self.resync.running:  # (one pass at a time)
            self._resync_at = now + self.timing.resync_every
            self.resync.begin()

    def _set_aside_wrong_types(self) -> None:
        """Keys of the wrong type that no step may read for a while (a namespace's request
        stream or answers, the counters, a node's record): set aside and named at every
        node check, not only when a step fails on one (module quarantine)."""
        moved = self.store.quarantine.repair(workloads=False)
        if moved:
            raise NeedRebuild(f"keys of the wrong type set aside: {', '.join(sorted(moved))}")

    def _forget_lost_nodes(self, now: float) -> bool:
        """Forget the nodes Lost longer than ``Timing.forget_lost_nodes`` ago: what ran
        there was requeued when they were lost, and a worker that comes back under the
        name registers it anew. True if one was forgotten."""
        keep = self.timing.forget_lost_nodes
        if keep is None:
            return False
        forgot = False
        for node in self.nodes.records.values():
            if node.state is NodeState.LOST and 0 < node.lost_at < now - keep:
                status = self.store.nodes.forget(self.holder, node.name, before=now - keep)
                self._check(status, f"forgetting node {node.name}")
                if status == "ok":  # (the node view is read again right after)
                    forgot = True
                    log.info("forgot node %s, lost more than %gs ago", node.name, keep)
        return forgot

    def _evict_from_lost_members(self, now: float, ready: Incarnations) -> None:
        """Requeue what holds quota on a pool member with no node left (ClusterLost), and
        admitted gangs pinned to nodes that are gone (NodeFailures): both wait to be
        admitted again elsewhere. Runs before the per-node check, so each is evicted once.
        ``ready``: the Ready nodes, each with its incarnation."""
        if self.members is not None:
            for key, message in self.members.lost().items():
                self.engine.evict(key, now, CLUSTER_LOST, "", message)
        # Only the gangs admitted since the last check, while the Ready nodes are those of
        # that check: 20,000 gangs waiting for nodes were each looked at every 5 s.
        unplaced = self.unplaced if ready != self._pins_checked else \
            [key for key in self._pins_unchecked if key in self.unplaced]
        self._pins_checked, self._pins_unchecked = ready, {}
        for key, nodes in topofeed.lost_pins(self.engine, list(unplaced),
                                             self.nodes.records).items():
            self.engine.evict(key, now, "NodeFailures", "",
                              f"node(s) {', '.join(nodes)} chosen by topology-aware admission "
                              "were lost before the pods were placed")

    def _evict_from_lost_nodes(self, now: float, ready: Incarnations) -> None:
        """Requeue gangs with a pod that was live on a node now gone (NodeFailures).

        Skipped while the Ready nodes (and their incarnations) are those of the last check:
        a gang is only ever placed on Ready nodes (the ``place`` script checks), so none
        placed since can be on a node gone — and a leader's first check always runs."""
        if ready == self._ready_checked:
            return
        self._ready_checked = ready
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

    def _expire(self, now: float) -> None:
        """Retention: forget the workloads finished longer than ``--retain-finished`` ago,
        the oldest first, at most :data:`EXPIRE_SLICE` a step (the next step goes on while
        more are due): a pool finishing thousands of jobs a second forgets as fast, and no
        step waits long for it."""
        retain = self.timing.retain_finished
        assert retain is not None
        due = self.store.indexes.finished_before(now - retain, EXPIRE_SLICE)
        self._expire_at = now + (0.0 if len(due) == EXPIRE_SLICE else self.timing.expire_every)
        if not due:
            return
        statuses = self.store.workloads.purge_finished(self.holder, due, before=now - retain)
        for status in statuses.values():
            self._check(status, "forgetting finished workloads")
        forgotten = sum(1 for s in statuses.values() if s == "ok:purged")
        if forgotten:
            log.info("forgot %d workload(s) finished more than %gs ago", forgotten, retain)

    # -- resuming after a failover ----------------------------------------------------
    def _resume(self, records: list[WorkloadRecord], now: float) -> None:
        placed = [r for r in records if r.state in HOLDS_QUOTA and r.placement]
        pods = self.store.pods.get_many([ref for r in placed for ref in r.pod_refs()])
        by_ref = {p.ref: p for p in pods if p is not None}
        for record in records:
            self.tracked[record.key] = Tracked(record.attempt, record.pods,
                                               submission=record.submission)
            if record.reason:  # what Redis says now: replaced only when it changes
                self.reasons.stored(record.key, record.reason, record.message)
            if record.state is State.EVICTING:
                self.stops.begin(record.key, record.attempt, record.pods)
        for record in sorted((r for r in records if r.state is State.ADMITTED
                              and not r.placement), key=lambda r: r.admitted_at or 0.0):
            self.waits_for_nodes(record.key)
        for record in placed:
            self.tracked[record.key].placed = tuple(
                (node, by_ref[ref].epoch if ref in by_ref else -1)
                for node, ref in zip(record.placement, record.pod_refs(), strict=False))
        # The previous leader may have stored placements it never sent.
        self.placer.resend([r.key for r in placed], now)

    @staticmethod
    def _check(status: str, what: str) -> None:
        if status == "fenced":
            raise Fenced(f"{what}: this scheduler no longer holds the lease")


def _past(deadline: float) -> bool:
    return time.monotonic() > deadline
