"""Step 4 of the leader: place admitted gangs on pool nodes and send their pods.

An admitted gang is *unplaced* (:attr:`Leader.unplaced
<kuota.service.leader.Leader.unplaced>`, in admission order) until the
:class:`Placer` finds nodes for all its pods — on the nodes topology-aware
admission pinned, in the pool dispatch chose (:mod:`kuota.service.pinning`,
:mod:`kuota.service.placing`) — and Redis has stored the placement.

**Gangs of one kind fit or fail alike.** A gang's kind is what it asks of
nodes: its pod sets (requests, node selectors, affinity, tolerations) with
their admitted counts, its flavors, and where it may go (pinned nodes, the
dispatched pool) — not its queue or priority, which nodes do not see, so a
thousand queues of one shape of job are one kind. Each kind is tried in
admission order until one gang does not fit; the rest of that kind wait behind
it (``WaitingForNodes``, with the placer's reason: :meth:`Placer.waiting_why`).
A backlog thus costs one failed try per kind and round, not one per waiting
gang, and a later gang of one kind never overtakes an earlier one. The line of
a kind is walked from its front: the gangs placed this round, then the one
that does not fit.

**Inadmissible.** A gang that does not fit is asked whether it could were the
Ready nodes empty (a kind found to fit is not asked again until those nodes
change). If no node could ever hold it, waiting would hold its quota forever:
it is deactivated (state ``Inactive``, reason :data:`INADMISSIBLE`, a message
naming what it asks and the node shapes there are) and its quota goes to the
others. Whenever the
Ready nodes change — a node registers again, leaves, is cordoned or
uncordoned — or a ResourceFlavor changes (:meth:`Placer.flavors_changed`), it
is given another chance: back to Pending, in its old place in line. Nothing is
judged before a node has registered, in a pool dispatch chose that has none, or
for a gang whose nodes admission pinned.

**All or nothing, one start job per node.** The placements of a round are
written in one call (:meth:`queueing.store.workloads.WorkloadStore.place_many`),
each gang's all-or-nothing: a gang Redis refuses (a node went away, the
workload changed) stays unplaced, the nodes or the workload read again. Then
the pods of every placed gang are sent as one rq start job per node
(:func:`kuota.service.jobs.enqueue`). The jobs are made while Redis stores the
placements (:meth:`~queueing.store.workloads.WorkloadStore.send_place_many`);
those of a gang it refused are dropped.

**Placed ahead.** While Redis stores a round's admissions the gangs are placed
as if they were stored (:meth:`Placer.plan_ahead`, called from
:func:`kuota.service.decisions.apply`), so the placements are ready when the
statuses come back. One made for an admission Redis refused, or for another
attempt than the one Redis gave (the attempt is guessed), gives its pods back
to the node view and is not stored; one made on a node view read again since
is dropped. Placing ahead only finds nodes: whether a gang that does not fit
waits or can never be placed is judged by :meth:`Placer.step`.

**Resending.** A start job can be lost (a leader died between placing and
sending, a worker died holding the job, Redis restarted). Pods still
``Placed`` ``Timing.resend_after`` after being sent, and those a new leader
finds placed, are sent again; starting a pod is a compare-and-set, so a pod
sent twice still runs once. Those of a gang that is stopping (Evicting) are
sent again too: the start of a pod asked to stop marks it Stopped and gives
its node back, and the gang's quota is released once no pod is left —
otherwise it would wait for that pod for good.

The lines logged here are the leader's (logger ``kuota.service.leader``), as
they were before this step had its own module.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from admission.errors import blame
from kuota.service import jobs, pinning, placing
from placement.ranking import NodeRanking
from queueing.store import PodPhase, PodRef, WorkloadRecord
from queueing.store.workloads import PlaceRequest, PodPlacement
from quota.config import FlavorConfig
from quota.lifecycle import State
from quota.resources import format_vector
from quota.workload import Admission, WorkloadInfo

if TYPE_CHECKING:
    from kuota.service.leader import Leader

#: The leader's logger: what is logged here is grepped for under that name.
log = logging.getLogger("kuota.service.leader")

#: Reason of a workload taken out of scheduling because no node can ever hold it.
INADMISSIBLE = "Inadmissible"

#: What a gang asks of nodes: (its pod sets' shapes; each admitted pod set's name, count and
#: flavors; where it may go). Not its queue nor its priority: nodes do not tell those apart.
Kind = tuple[tuple[int, ...], tuple[tuple[object, ...], ...], str]
#: The Ready nodes: (name, epoch, cordoned) each, sorted.
ReadyNodes = tuple[tuple[str, int, bool], ...]


class Placer:
    def __init__(self, leader: Leader) -> None:
        self.leader = leader
        #: Placed workloads whose pods were sent but may not all have started -> when sent.
        self._sent_at: dict[str, float] = {}
        #: Unplaced gangs by kind (what they ask of nodes), in admission order.
        self._by_kind: dict[Kind, dict[str, None]] = {}
        self._kind_of: dict[str, Kind] = {}
        #: Gangs admitted since the last round, their kind not looked at yet.
        self._new: dict[str, None] = {}
        #: Why the first gang of a kind did not fit, this round.
        self._waiting_why: dict[Kind, str] = {}
        #: Counts the changes of why a kind waits: while it stays the same, the placer has no
        #: new pending reason to tell (gangs join and leave lines only as the engine admits,
        #: evicts or finishes them, which the engine counts).
        self.told = 0
        #: Workloads set aside because no node could ever hold them -> the Ready nodes then
        #: (names and epochs); given another chance when the nodes differ.
        self._inadmissible: dict[str, ReadyNodes | None] = {}
        #: Kinds of gang found to fit these nodes were they empty (so they only wait).
        self._could_fit: dict[Kind, ReadyNodes] = {}
        #: Placements found but not stored yet (some ahead: :meth:`plan_ahead`): gang ->
        #: what to store, its pods, and the node view (its refresh count) they were added to.
        self._planned: dict[str, tuple[PlaceRequest, list[placing.GangPod], int]] = {}
        #: Each pool's nodes, ranked for the kinds of pod placed there (kept between
        #: rounds: a round ranks again only the nodes that changed since the last).
        self._rankings: dict[str, NodeRanking] = {}

    def resume(self, records: Iterable[WorkloadRecord]) -> None:
        """Set aside as Inadmissible by an earlier leader: tried again at the first step."""
        self._inadmissible = {r.key: None for r in records
                              if r.state is State.INACTIVE and r.reason == INADMISSIBLE}

    def waits(self, key: str) -> None:
        """Admitted gang ``key`` waits for nodes (in admission order)."""
        self.leader.unplaced[key] = None
        self._new[key] = None

    def step(self, now: float) -> None:
        self._place(now)
        if self._inadmissible:
            self._retry_inadmissible(now)

    def flavors_changed(self) -> None:
        """ResourceFlavors changed, and with them which nodes a gang may use: which kinds
        could fit is judged again, and the gangs set aside as fitting no node are tried
        again at the next step."""
        self._could_fit.clear()
        self._inadmissible = dict.fromkeys(self._inadmissible)

    def waiting_why(self, key: str) -> str | None:
        """Why an unplaced gang waits for nodes (the first of its kind did not fit), or None."""
        kind = self._kind_of.get(key)
        if kind is not None and kind in self._waiting_why and key in self.leader.unplaced:
            return self._waiting_why[kind]
        return None

    def plan_ahead(self) -> None:
        """Work out where the gangs go while Redis stores their admissions (the leader
        calls this with the admissions sent, as if stored: :func:`kuota.service.decisions.
        apply`); :meth:`step` stores what still holds. A gang that does not fit is left to
        :meth:`step`, which tells why."""
        self._plan(self.leader.clock(), ahead=True)

    def _place(self, now: float) -> None:
        leader = self.leader
        if not leader.unplaced and not self._planned:
            self._new.clear()  # (all placed or gone already)
            return
        if leader.nodes.dirty:
            leader.nodes.refresh()
        # A plan made ahead holds if its gang's admission was stored as planned (the attempt
        # guessed right) and the node view was not read again since (it has the pods).
        for key, (request, _, seen) in list(self._planned.items()):
            tracked = leader.tracked.get(key)
            if seen != leader.nodes.refreshes:
                del self._planned[key]
            elif key not in leader.unplaced or tracked is None \
                    or tracked.attempt != request.attempt:
                del self._planned[key]
                leader.nodes.unplace(request.pods)
        self._plan(now, ahead=False)
        planned, self._planned = self._planned, {}
        if planned:
            self._commit(now, [request for request, _, _ in planned.values()],
                         {key: pods for key, (_, pods, _) in planned.items()})

    def _plan(self, now: float, *, ahead: bool) -> None:
        """Find nodes for unplaced gangs, each kind in admission order until one does not
        fit (module doc); the placements found go to :attr:`_planned`, their pods added to
        the node view. ``ahead``: only find nodes, judge nothing."""
        leader = self.leader
        self._sort_new()
        if not leader.unplaced:
            return
        pools = self.pools()
        alike = _AlikeGangs(leader.engine.cache.flavors)
        # Each kind's line is walked from its front, never copied: a backlog of thousands
        # waiting for nodes costs the gangs placed this round and one that does not fit.
        for kind, keys in list(self._by_kind.items()):
            gone: list[str] = []  # (taken out of the line after the walk)
            for key in keys:
                if key not in leader.unplaced:  # placed, evicted or finished meanwhile
                    gone.append(key)
                    continue
                if key in self._planned:
                    continue
                record, tracked = leader.engine.records[key], leader.tracked[key]
                assert record.admission is not None
                with blame(key):
                    pods = alike.pods(record.info, record.admission)
                    pool = (leader.members.pool_for(record.admission)
                            if leader.members is not None else None)
                    result = pinning.place(pods, record.admission, pools, pool=pool)
                if isinstance(result, placing.Unplaceable):
                    if not ahead and self._set_aside(kind, key, pods, record.admission, pool,
                                                     now):
                        gone.append(key)
                        continue
                    if not ahead and self._waiting_why.get(kind) != result.reason:
                        self._waiting_why[kind] = result.reason
                        self.told += 1
                    break
                # Later gangs of this round see these pods on their nodes.
                leader.nodes.update(result.updated)
                pools[result.pool].update(result.updated.values())
                self._planned[key] = (PlaceRequest(key, tracked.attempt, tuple(
                    PodPlacement(PodRef(key, tracked.attempt, p.index), node, p.pod_set,
                                 p.requests, leader.nodes.epoch(node))
                    for p, node in zip(pods, result.nodes, strict=True))), pods,
                    leader.nodes.refreshes)
            else:
                if not ahead:
                    self._waiting_why.pop(kind, None)
            for key in gone:
                del keys[key]
                self._kind_of.pop(key, None)
            if not keys:
                del self._by_kind[kind]
                self._could_fit.pop(kind, None)

    def _sort_new(self) -> None:
        """Put each gang admitted since the last round in the line of its kind."""
        leader = self.leader
        for key in self._new:
            before = self._kind_of.get(key)
            if key not in leader.unplaced or (
                    before is not None and key in self._by_kind.get(before, ())):
                continue  # (gone, or in line already: told twice, ahead and once stored)
            record = leader.engine.records.get(key)
            if record is None or record.admission is None or key not in leader.tracked:
                leader.unplaced.pop(key)
                continue
            # Pinned nodes and a dispatched pool decide where a gang may go, too.
            where = pinning.placement_key(record.admission, leader.members.pools()
                                          if leader.members is not None else {})
            kind = (tuple(ps.shape_hash for ps in record.info.pod_sets),
                    _admitted(record.admission), where)
            self._kind_of[key] = kind
            self._by_kind.setdefault(kind, {})[key] = None
        self._new.clear()

    def pools(self) -> dict[str, NodeRanking]:
        """The node view's pools, as rankings brought up to date with it. Who places a gang
        on one :meth:`NodeRanking.update` s it, as the node view."""
        pools = self.leader.nodes.pools()
        self._rankings = {name: self._rankings.get(name) or NodeRanking(placing.SCORER)
                          for name in pools}
        for name, ranking in self._rankings.items():
            ranking.sync(pools[name])
        return self._rankings

    def _set_aside(self, kind: Kind, key: str, pods: list[placing.GangPod],
                   admission: Admission, pool: str | None, now: float) -> bool:
        """Deactivate a gang that does not fit if no node could ever hold it (waiting would
        hold its quota forever); True if it was (the caller takes it out of its line)."""
        leader = self.leader
        nodes_now = self._ready_nodes()
        with blame(key):
            # Judged once per kind and set of nodes: a gang that waits for busy nodes costs
            # no second placement every round.
            never = None if self._could_fit.get(kind) == nodes_now else \
                self._never_fits(pods, admission, pool)
        if never is None:
            self._could_fit[kind] = nodes_now
            return False
        log.warning("workload %s can never be placed: %s", key, never)
        leader.engine.deactivate(key, now, INADMISSIBLE, never)
        self._inadmissible[key] = nodes_now
        leader.unplaced.pop(key, None)
        return True

    def _commit(self, now: float, requests: list[PlaceRequest],
                pods_of: dict[str, list[placing.GangPod]]) -> None:
        """Store the placements (all pods of a gang or none) and send the pods."""
        leader = self.leader
        # (the start jobs are made while Redis stores the placements: module doc)
        with leader.store.workloads.send_place_many(leader.holder, requests, now) as sent:
            placements = [tuple((p.node, p.epoch) for p in r.pods) for r in requests]
            pod_jobs, commands = [], _Commands()
            for request, placed in zip(requests, placements, strict=True):
                with blame(request.key):
                    pod_jobs.append(self._pod_jobs(request.key, request.attempt, placed,
                                                   pods_of[request.key], commands))
            statuses = sent.statuses()
        to_send: list[jobs.PodJob] = []
        for request, status, placed, gang_jobs in zip(requests, statuses, placements, pod_jobs,
                                                      strict=True):
            leader._check(status, f"placing {request.key}")
            if status.startswith("ok"):
                leader.unplaced.pop(request.key, None)
                leader.tracked[request.key].placed = placed
                leader.nodes.placed(request.pods)
                record = leader.engine.records[request.key]
                record.pending_reason = record.pending_message = None
                to_send += gang_jobs
                self._sent_at[request.key] = now
            else:  # a node went away, or the workload changed: look again
                log.info("placement of %s not stored (%s)", request.key, status)
                leader.nodes.dirty = True
                if not status.startswith("node:"):
                    leader.recheck.add(request.key)
        jobs.enqueue(leader.conn.raw, leader.store.keys, to_send)

    def _never_fits(self, pods: list[placing.GangPod], admission: Admission,
                    pool: str | None) -> str | None:
        """Why no Ready node could hold the gang even with nothing else on it, or None when
        it could (it waits) — or when that cannot be told yet: no node has registered, the
        pool dispatch chose has none, or topology-aware admission pinned its nodes."""
        empty = self.leader.nodes.empty_pools()
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

    def _ready_nodes(self) -> ReadyNodes:
        """Which nodes there are to place on (a node that registers again, or is cordoned or
        uncordoned, changes it)."""
        return tuple(sorted((n.name, n.epoch, n.cordoned)
                            for n in self.leader.nodes.records.values() if n.ready))

    def _retry_inadmissible(self, now: float) -> None:
        """Give gangs no node could hold another chance once the Ready nodes change (a
        bigger node may have registered): back to Pending, in their old place in line."""
        leader = self.leader
        if leader.nodes.dirty:
            leader.nodes.refresh()
        nodes = self._ready_nodes()
        for key in [k for k, seen in self._inadmissible.items() if seen != nodes]:
            del self._inadmissible[key]
            record, tracked = leader.engine.records.get(key), leader.tracked.get(key)
            if record is None or record.state is not State.INACTIVE or tracked is None:
                continue
            status = leader.store.workloads.settle(
                leader.holder, WorkloadRecord(key, State.INACTIVE, attempt=tracked.attempt),
                event="activate", reason="Pending", message="nodes changed: trying again",
                queued_at=record.info.created, now=now)
            leader._check(status, f"activating {key}")
            if status == "ok":
                leader.engine.activate(key, now)
            else:
                leader.recheck.add(key)

    def _pod_jobs(self, key: str, attempt: int, placed: tuple[tuple[str, int], ...],
                  pods: list[placing.GangPod], commands: _Commands | None = None
                  ) -> list[jobs.PodJob]:
        obj = self.leader.engine.records[key].info.source
        commands = commands or _Commands()
        peers = tuple(node for node, _ in placed)
        out = []
        for pod, (node, epoch) in zip(pods, placed, strict=True):
            command, env, working_dir = commands.of(obj, pod.pod_set)
            out.append(jobs.PodJob(self.leader.store.prefix, PodRef(key, attempt, pod.index).id,
                                   node, epoch, len(placed), pod.pod_set, peers, command, env,
                                   pod.requests, working_dir))
        return out

    # -- resending -----------------------------------------------------------------------
    def resend_overdue(self, now: float) -> None:
        """Send again the pods of live workloads sent ``Timing.resend_after`` ago or more."""
        leader = self.leader
        self._sent_at = {k: at for k, at in self._sent_at.items() if k in leader.tracked}
        self.resend([k for k, at in self._sent_at.items()
                     if now - at >= leader.timing.resend_after], now)

    def resend(self, keys: list[str], now: float) -> None:
        """Send again the start jobs of pods still Placed: a start job can be lost (a leader
        died between placing and sending, a worker died holding the job, Redis restarted).
        Starting a pod is a compare-and-set, so a pod sent twice still runs once."""
        leader = self.leader
        refs = {key: [PodRef(key, t.attempt, i) for i in range(len(t.placed))]
                for key in keys if (t := leader.tracked.get(key)) is not None and t.placed}
        for key in set(keys) - refs.keys():  # evicted or finished: nothing to send
            self._sent_at.pop(key, None)
        pods = leader.store.pods.get_many([ref for rs in refs.values() for ref in rs])
        placed = {p.ref for p in pods if p is not None and p.state is PodPhase.PLACED}
        to_send: list[jobs.PodJob] = []
        for key, key_refs in refs.items():
            unsent = [i for i, ref in enumerate(key_refs) if ref in placed]
            record = leader.engine.records.get(key)
            # (a stopping gang's too: the start of a pod asked to stop gives its node back)
            if not unsent or record is None \
                    or record.state not in (State.ADMITTED, State.EVICTING) \
                    or record.admission is None:
                self._sent_at.pop(key, None)
                continue
            tracked = leader.tracked[key]
            with blame(key):
                gang = placing.gang_pods(record.info, record.admission,
                                         leader.engine.cache.flavors)
                all_jobs = self._pod_jobs(key, tracked.attempt, tracked.placed, gang)
            to_send += [all_jobs[i] for i in unsent]
            self._sent_at[key] = now
        if to_send:
            log.info("sending %d pod(s) again that were placed but not started", len(to_send))
            jobs.enqueue(leader.conn.raw, leader.store.keys, to_send)


def _admitted(admission: Admission) -> tuple[tuple[object, ...], ...]:
    """What an admission gives a gang's pods: each pod set's name, count and flavors."""
    return tuple((ps.name, ps.count, *ps.flavors.items()) for ps in admission.pod_sets)


class _AlikeGangs:
    """The pods of the gangs placed in one round, made once per kind of gang: gangs of one
    manifest shape share their pod sets (:class:`kuota.service.rebuild.SpecCache`), and
    alike admissions give their pods the same requests and node selectors. Made afresh
    every round, as the flavors' node labels may change between rounds."""

    def __init__(self, flavors: Mapping[str, FlavorConfig]) -> None:
        self._flavors = flavors
        self._made: dict[Hashable, list[placing.GangPod]] = {}

    def pods(self, info: WorkloadInfo, admission: Admission) -> list[placing.GangPod]:
        # (the pod sets by identity: they live as long as the records holding them)
        alike = (id(info.pod_sets), _admitted(admission))
        made = self._made.get(alike)
        if made is None:
            made = self._made[alike] = placing.gang_pods(info, admission, self._flavors)
        return list(made)


class _Commands:
    """Each pod set's command, environment and working directory, read once per manifest
    shape in a round of start jobs (the shape's checked object is shared by its gangs)."""

    def __init__(self) -> None:
        self._read: dict[tuple[int, str], tuple[tuple[str, ...], dict[str, str], str]] = {}

    def of(self, obj: Any, pod_set: str) -> tuple[tuple[str, ...], dict[str, str], str]:
        key = (id(obj), pod_set)  # (the object lives as long as the records holding it)
        read = self._read.get(key)
        if read is None:
            command, env = jobs.pod_command(obj, pod_set)
            read = self._read[key] = (command, env, jobs.working_dir(obj, pod_set))
        return read
