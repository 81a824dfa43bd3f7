"""Pods as workers see them: start, exit, stop requests and logs.

A worker starts a pod only through :meth:`PodStore.start`, which moves it
Placed → Running if, at that instant, the pod was not asked to stop, its
workload is still Admitted at the same attempt and the node is still the same
Ready incarnation; otherwise the pod is marked Stopped and never runs. That
check-and-set is what makes a re-delivered rq job harmless.

:meth:`PodStore.exit` records how the process ended and, in the same atomic
step, finishes the workload when its last pod succeeded, or — on a failure —
stops the other pods and requeues the gang (while ``failures < backoffLimit``)
or fails it.

Logs are kept in Redis as a list of chunks per pod (the newest
:data:`LOG_CHUNKS` chunks), so ``kuota logs`` works from any machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from queueing.store.events import EVENTS_MAXLEN
from queueing.store.keys import Keys, PodRef
from queueing.store.nodes import NodeStore
from queueing.store.records import PodPhase, PodRecord
from queueing.store.scripts import Scripts

#: Chunks of output kept per pod.
LOG_CHUNKS: Final = 4096


@dataclass(frozen=True)
class PodStart:
    """A worker's request to start one pod (see :meth:`PodStore.start`)."""

    ref: PodRef
    node: str
    epoch: int
    devices: str = ""
    #: The worker already runs a process for the pod (the store lost its start): a pod
    #: asked to stop is then answered ``stop`` and left as it is, its node still held,
    #: until the process's exit is reported — not marked Stopped while it still runs.
    running: bool = False


@dataclass(frozen=True)
class PodExit:
    """How one pod's process ended (see :meth:`PodStore.exit`)."""

    ref: PodRef
    node: str
    pod_count: int
    exit_code: int
    stopped: bool = False
    message: str = ""
    pid: int = 0


class PodStore:
    def __init__(self, redis: Any, keys: Keys, scripts: Scripts) -> None:
        self._r = redis
        self._keys = keys
        self._scripts = scripts
        self._nodes = NodeStore(redis, keys, scripts)

    def start(self, ref: PodRef, *, node: str, epoch: int, devices: str, now: float,
              running: bool = False) -> str:
        """``ok``: run it; ``stopped``: never run it; or ``state:…``, ``wrong-node``.
        ``running`` (:attr:`PodStart.running`): ``stop`` instead of ``stopped``."""
        return self.start_many([PodStart(ref, node, epoch, devices, running)], now)[0]

    def start_many(self, starts: Sequence[PodStart], now: float) -> list[str]:
        """:meth:`start` for many pods in one round trip (each checked on its own): what a
        runner hosting many pods sends when a start job hands it a round of them."""
        k = self._keys
        return self._scripts.batch("pod_start", [
            ([k.pod(s.ref), k.workload(s.ref.workload), k.node(s.node), k.node_pods(s.node),
              k.events],
             [s.ref.id, s.ref.attempt, s.node, s.epoch, now, s.devices, EVENTS_MAXLEN,
              "1" if s.running else ""])
            for s in starts])

    def exit(self, ref: PodRef, *, node: str, pod_count: int, exit_code: int, stopped: bool,
             message: str, pid: int, now: float) -> str:
        """Record the end of the pod's process; ``ok:<phase>`` or ``ok:<earlier phase>``, or
        ``elsewhere``: the pod is placed on another node now (the placement this process
        ran for was lost with Redis's last second, and the pod placed again), and is left
        to its own start there."""
        return self.exit_many([PodExit(ref, node, pod_count, exit_code, stopped, message, pid)],
                              now)[0]

    def exit_many(self, exits: Sequence[PodExit], now: float) -> list[str]:
        """:meth:`exit` for many pods in one round trip, applied in order."""
        k = self._keys
        return self._scripts.batch("pod_exit", [
            ([k.pod(e.ref), k.workload(e.ref.workload), k.node_pods(e.node),
              k.history(e.ref.workload), k.events, k.unfinished, k.finished,
              *(k.pod(PodRef(e.ref.workload, e.ref.attempt, i))
                for i in range(e.pod_count) if i != e.ref.index)],
             [e.ref.id, e.ref.attempt, e.exit_code, now, e.stopped, EVENTS_MAXLEN, e.message,
              e.pid, e.node])
            for e in exits])

    def on_node(self, node: str) -> list[PodRef]:
        """The pods holding ``node``'s capacity (placed or running there). A member that is
        no pod id (written around kuota) is taken out of the set and named in the
        quarantine hash (:meth:`~queueing.store.nodes.NodeStore.pod_ids`), not returned."""
        return [PodRef.parse(pod_id) for pod_id in
                self._nodes.pod_ids([node], quarantine=True)[node]]

    def get(self, ref: PodRef) -> PodRecord | None:
        h: dict[str, str] = self._r.hgetall(self._keys.pod(ref))
        return PodRecord.from_hash(ref, h) if h else None

    def get_many(self, refs: Sequence[PodRef]) -> list[PodRecord | None]:
        pipe = self._r.pipeline(transaction=False)
        for ref in refs:
            pipe.hgetall(self._keys.pod(ref))
        return [PodRecord.from_hash(ref, h) if h else None
                for ref, h in zip(refs, pipe.execute(), strict=True)]

    def should_stop(self, refs: Sequence[PodRef]) -> list[bool]:
        """For running pods: was each asked to stop, or taken from its node (Lost)?"""
        pipe = self._r.pipeline(transaction=False)
        for ref in refs:
            pipe.hmget(self._keys.pod(ref), "state", "stop")
        answers = pipe.execute()
        return [stop == "1" or state != PodPhase.RUNNING for state, stop in answers]

    def append_log(self, ref: PodRef, chunk: str) -> None:
        pipe = self._r.pipeline(transaction=False)
        pipe.rpush(self._keys.log(ref), chunk)
        pipe.ltrim(self._keys.log(ref), -LOG_CHUNKS, -1)
        pipe.execute()

    def logs(self, ref: PodRef) -> str:
        return "".join(self._r.lrange(self._keys.log(ref), 0, -1))
