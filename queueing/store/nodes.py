"""Nodes of worker pools: registration, heartbeats, and declaring a node lost.

Each ``kuota worker`` registers one node: its pool, capacity, labels and GPU
device ids. Registration bumps the node's *epoch*; pods record the epoch of
the node they were placed on, so pods of a worker that died and came back
under the same name are recognised as gone (marked Lost) instead of being
waited for. The worker heartbeats every few seconds; Redis stamps the time
with its own clock (``TIME`` inside the script).

A node whose heartbeat is older than the scheduler's node timeout is declared
Lost by the active scheduler (fenced), and a worker that stops cleanly
declares its own node Lost: either way its live pods become Lost and its
capacity is gone, and the scheduler requeues the workloads that ran there.

Scripts that act on a node's pods get the pod keys in ``KEYS[]`` as read just
before; if the set changed meanwhile the script answers ``stale`` and the call
is retried with a fresh read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from queueing.store.errors import Conflict, NodeInUse, NotFound, outcome
from queueing.store.events import EVENTS_MAXLEN
from queueing.store.keys import Keys, PodRef, check_node_name
from queueing.store.quarantine import Quarantine
from queueing.store.records import NodeRecord, vector_to_json
from queueing.store.scripts import Scripts
from quota.resources import ResourceVector

_RETRIES = 20


class NodeStore:
    def __init__(self, redis: Any, keys: Keys, scripts: Scripts) -> None:
        self._r = redis
        self._keys = keys
        self._scripts = scripts
        self._quarantine = Quarantine(redis, keys, scripts)

    def register(self, name: str, *, pool: str, capacity: ResourceVector,
                 labels: Mapping[str, str], devices: Sequence[str], now: float,
                 replace: bool = False, heartbeat_every: float = 5.0,
                 stops_within: float = 0.0) -> int:
        """(Re)register a node as Ready; returns its new epoch.

        ``stops_within``: the longest a process of this worker runs on once the store no
        longer lists its pod (its stop check plus its grace); a scheduler that meets a
        restarted Redis waits that long before placing pods again.

        Raises :class:`NodeInUse` if a live worker serves the name, unless ``replace``
        (which fences that worker: its next heartbeat learns it was replaced)."""
        check_node_name(name)
        if not pool:
            raise ValueError(f"node {name}: pool must not be empty")
        k = self._keys
        for _ in range(_RETRIES):
            pods = sorted(self.pod_ids([name], quarantine=True)[name])
            status = self._scripts.run(
                "register_node",
                [k.nodes, k.node(name), k.node_pods(name), k.events,
                 *(k.pod(PodRef.parse(p)) for p in pods)],
                [name, pool, vector_to_json(capacity), json.dumps(dict(labels), sort_keys=True),
                 json.dumps(list(devices)), now, EVENTS_MAXLEN, "1" if replace else "0",
                 heartbeat_every, stops_within, *pods])
            if status.startswith("live:"):
                raise NodeInUse(
                    f"node {name} is served by a live worker (its last heartbeat was "
                    f"{status[5:]}s ago): stop that worker, choose another --node name, or "
                    "pass --replace to take the name over (the old worker is fenced and stops)")
            if status != "stale":
                return int(outcome(status, f"node {name}"))
        raise Conflict(f"node {name}: pods kept changing during registration")

    def set_scheduling(self, name: str, *, cordoned: bool, draining: bool = False) -> None:
        """Cordon (no new pods), drain (cordon + requeue what runs there) or uncordon."""
        k = self._keys
        status = self._scripts.run("node_scheduling", [k.node(name), k.events],
                                   [name, "1" if cordoned else "", "1" if draining else "",
                                    EVENTS_MAXLEN])
        outcome(status, f"node {name}")

    def remove(self, name: str) -> None:
        """Forget a node no worker serves; a Ready node is refused (:class:`Conflict`)."""
        k = self._keys
        status = self._scripts.run("node_remove", [k.nodes, k.node(name), k.node_pods(name),
                                                   k.events], [name, EVENTS_MAXLEN])
        if status == "state:Ready":
            raise Conflict(f"node {name} is Ready (a worker serves it): stop its worker first "
                           f"(`kuota node drain {name}` moves its workloads elsewhere)")
        outcome(status, f"node {name}")

    def forget(self, holder: str, name: str, *, before: float) -> str:
        """The scheduler forgets a node Lost since before ``before`` (fenced): ``ok``,
        ``young``, ``state:<state>`` (not Lost: kept) or ``fenced``."""
        k = self._keys
        return self._scripts.run("node_forget", [k.lease, k.nodes, k.node(name),
                                                 k.node_pods(name), k.events],
                                 [holder, name, before, EVENTS_MAXLEN])

    def heartbeat(self, name: str, epoch: int) -> str:
        """``ok``, ``replaced`` (another worker took the name), ``state:Lost``, ``missing``, or
        ``unregistered`` (the store has an earlier epoch: it lost this registration)."""
        return self._scripts.run("heartbeat", [self._keys.node(name)], [epoch])

    def leave(self, name: str, epoch: int, *, reason: str, now: float) -> str:
        """The worker itself takes its node out (clean shutdown)."""
        return self._leave(name, holder="", timeout=0.0, epoch=epoch, reason=reason, now=now)

    def expire(self, holder: str, name: str, *, timeout: float, now: float) -> str:
        """The scheduler declares a silent node Lost: ``ok``, ``alive``, ``fenced``, ``state:…``."""
        return self._leave(name, holder=holder, timeout=timeout, epoch=0,
                           reason=f"NodeFailures: no heartbeat for {timeout:g}s", now=now)

    def _leave(self, name: str, *, holder: str, timeout: float, epoch: int, reason: str,
               now: float) -> str:
        k = self._keys
        for _ in range(_RETRIES):
            pods = sorted(self.pod_ids([name], quarantine=True)[name])
            status = self._scripts.run(
                "node_leave",
                [k.lease, k.node(name), k.node_pods(name), k.events,
                 *(k.pod(PodRef.parse(p)) for p in pods)],
                [holder, timeout, epoch, reason, now, EVENTS_MAXLEN, *pods])
            if status != "stale":
                return status
        raise Conflict(f"node {name}: pods kept changing while it was being taken out")

    # -- reads -------------------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(str(n) for n in self._r.smembers(self._keys.nodes))

    def get(self, name: str) -> NodeRecord:
        h: dict[str, str] = self._r.hgetall(self._keys.node(name))
        if not h:
            raise NotFound(f"node {name}: not found")
        return NodeRecord.from_hash(name, h)

    def all(self) -> list[NodeRecord]:
        names = self.names()
        pipe = self._r.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self._keys.node(name))
        return [NodeRecord.from_hash(name, h)
                for name, h in zip(names, pipe.execute(), strict=True) if h]

    def pod_ids(self, names: Iterable[str], *, quarantine: bool = False,
                bad: dict[str, str] | None = None) -> dict[str, set[str]]:
        """Ids of the pods holding each node's capacity. A member that is no pod id (written
        around kuota) is left out: named in ``bad`` (``set key member`` -> why), and with
        ``quarantine`` taken out of the set and named in the quarantine hash — what the
        scripts that read the set whole need (registering, leaving)."""
        names = list(names)
        pipe = self._r.pipeline(transaction=False)
        for name in names:
            pipe.smembers(self._keys.node_pods(name))
        ids: dict[str, set[str]] = {}
        for name, members in zip(names, pipe.execute(raise_on_error=False), strict=True):
            if isinstance(members, Exception):  # WRONGTYPE: the key is no set
                ids[name] = set()
                self._not_a_set(name, quarantine, bad)
                continue
            ids[name] = {str(p) for p in members if PodRef.parse_or_none(str(p)) is not None}
            for member in sorted(set(members) - ids[name]):
                self._malformed(name, str(member), quarantine, bad)
        return ids

    def _not_a_set(self, name: str, quarantine: bool, bad: dict[str, str] | None) -> None:
        set_key = self._keys.node_pods(name)
        if bad is not None:
            bad[set_key] = f"node {name}: its pods set is a {self._r.type(set_key)}, not a set"
        if quarantine:
            self._quarantine.set_aside(set_key, "set")

    def _malformed(self, name: str, member: str, quarantine: bool,
                   bad: dict[str, str] | None) -> None:
        set_key = self._keys.node_pods(name)
        reason = f"node {name}: {member[:100]!r} is not a pod id (namespace/name:attempt:index)"
        if bad is not None:
            bad[f"{set_key} {member}"] = reason
        if quarantine:
            self._quarantine.drop_member(set_key, member, reason)

    def time(self) -> float:
        """Redis's clock (what heartbeats are stamped with)."""
        seconds, micros = self._r.time()
        return int(seconds) + int(micros) / 1_000_000
