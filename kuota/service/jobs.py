"""Pods as rq jobs: what a worker needs to start one, and enqueueing them.

Placed pods travel to their node's rq queue as rq jobs: one job per node and
placement round, carrying every pod placed on that node in that round (one
pod, for a lone workload; many, when a backlog is being placed), with a
deterministic job id (:meth:`queueing.store.keys.Keys.start_job_id`). rq's
bookkeeping costs several milliseconds of CPU per job on both ends, so a
job per pod would cap a busy node at a few dozen pod starts a second; a job
per round does not. The job only *starts* the pods (see
:mod:`kuota.service.pod`); each pod's lifecycle is in the store, so sending a
pod twice — a new leader re-sending pods that were placed but perhaps never
sent — at worst runs a job that finds the pod already started and does
nothing for it.

The command comes from the pod set's pod template: the first container's
``command`` followed by its ``args`` — an argument list, never a shell
string — its ``env`` values and its ``workingDir``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any, Final

import orjson

from queueing.store import Keys, PodRef
from quota import api
from quota.values import value

#: The rq job function (by name, so enqueueing needs no import of the worker side).
START_PODS: Final = "kuota.service.pod.start_pods"
#: rq keeps nothing of a finished start job: the pod's own record is in the store.
RESULT_TTL: Final = 0
FAILURE_TTL: Final = 86_400


@value
class PodJob:
    prefix: str
    pod_id: str
    node: str
    epoch: int
    pod_count: int
    pod_set: str
    #: Node of every pod of the gang, by pod index.
    peers: tuple[str, ...]
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, int] = field(default_factory=dict)
    #: The container's ``workingDir`` ("": the worker's own directory).
    working_dir: str = ""

    @property
    def gang(self) -> str:
        """The gang this pod belongs to: its workload and attempt (``namespace/name#1``)."""
        # (the pod id is ``namespace/name:attempt:index``, as PodRef.id makes it; read
        # without PodRef.parse's checks: a start job sends one per pod)
        workload, _, attempt = self.pod_id.rpartition(":")[0].rpartition(":")
        return f"{workload}#{attempt}"

    def to_dict(self) -> dict[str, Any]:
        """The pod without its peers, which :func:`encode` sends once per gang."""
        return {"prefix": self.prefix, "pod_id": self.pod_id, "node": self.node,
                "epoch": self.epoch, "pod_count": self.pod_count, "pod_set": self.pod_set,
                "gang": self.gang, "command": list(self.command), "env": dict(self.env),
                "requests": dict(self.requests), "working_dir": self.working_dir}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any],
                  gangs: Mapping[str, tuple[str, ...]] | None = None) -> PodJob:
        peers = (gangs or {}).get(str(doc.get("gang")))
        if peers is None:  # a job from a scheduler that sent the peers with every pod
            peers = tuple(doc["peers"])
        return cls(prefix=str(doc["prefix"]), pod_id=str(doc["pod_id"]), node=str(doc["node"]),
                   epoch=int(doc["epoch"]), pod_count=int(doc["pod_count"]),
                   pod_set=str(doc["pod_set"]), peers=peers,
                   command=tuple(doc["command"]), env=dict(doc.get("env") or {}),
                   requests={str(k): int(v) for k, v in (doc.get("requests") or {}).items()},
                   working_dir=str(doc.get("working_dir") or ""))


def encode(jobs: Sequence[PodJob]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The arguments of one node's start job: its pods, and the nodes of each of their gangs
    once — sent with every pod, a gang of n pods would carry n² node names (10,000 pods:
    10⁸ names, gigabytes in Redis)."""
    gangs: dict[str, list[str]] = {}
    docs = []
    for job in jobs:
        doc = job.to_dict()
        if doc["gang"] not in gangs:
            gangs[doc["gang"]] = list(job.peers)
        docs.append(doc)
    return docs, gangs


def decode(docs: Sequence[Mapping[str, Any]],
           gangs: Mapping[str, Sequence[str]] | None = None) -> list[PodJob]:
    """The pods of a start job (:func:`encode`)."""
    peers = {gang: tuple(nodes) for gang, nodes in (gangs or {}).items()}
    return [PodJob.from_dict(doc, peers) for doc in docs]


def pod_command(workload: api.Workload, pod_set: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The argument list and environment of a pod set's pods; ValueError if there is none."""
    ps = workload.spec.pod_set(pod_set)
    if ps is None:
        raise ValueError(f"no podSet {pod_set!r}")  # (the caller names the workload)
    containers = ps.template.spec.containers
    where = f"spec.podSets[{pod_set}].template.spec.containers[0]"
    if not containers:
        raise ValueError(f"{where}: a pod needs a container with a command")
    container = containers[0]
    argv = tuple(container.command or ()) + tuple(container.args or ())
    if not argv or not argv[0]:
        raise ValueError(f"{where}: command is required in Redis mode (the program to run)")
    env = {e.name: e.value or "" for e in container.env or ()}
    return argv, env


def working_dir(workload: api.Workload, pod_set: str) -> str:
    """The first container's ``workingDir`` ("" when unset)."""
    ps = workload.spec.pod_set(pod_set)
    if ps is None or not ps.template.spec.containers:
        return ""
    return str((ps.template.spec.containers[0].model_extra or {}).get("workingDir") or "")


class JobSerializer:
    """How the jobs of a node's queue are written: JSON, never pickles — unpickling what
    anyone with write access to Redis put there would run their code in the worker.

    orjson writes it and reads it: a start job carries a round's pods on a node, up to
    thousands, and the standard library's ``json`` took about twelve times as long per
    pod (``benchmarks/start_jobs.py``). The bytes are plain JSON, so a worker reading with
    rq's own ``JSONSerializer`` reads them as well."""

    @staticmethod
    def dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    @staticmethod
    def loads(data: bytes | str) -> Any:
        return orjson.loads(data)


def node_queue(raw: Any, keys: Keys, node: str) -> Any:
    """The rq queue of ``node``'s worker (its jobs written by :class:`JobSerializer`)."""
    from rq import Queue  # here, not at the top: the CLI's start-up does without rq

    return Queue(keys.node_queue(node), connection=raw, serializer=JobSerializer)


def enqueue(raw: Any, keys: Keys, jobs: Iterable[PodJob]) -> int:
    """Send the pods to their nodes' queues, one rq job per node, in one pipeline.

    Returns how many rq jobs were enqueued.
    """
    by_node: dict[str, list[PodJob]] = {}
    for job in jobs:
        by_node.setdefault(job.node, []).append(job)
    if not by_node:
        return 0
    from rq import Queue  # here, not at the top: only the scheduler enqueues (CLI start-up)

    pipe = raw.pipeline()
    for node, node_jobs in by_node.items():
        refs = [PodRef.parse(job.pod_id) for job in node_jobs]
        data = Queue.prepare_data(START_PODS, args=encode(node_jobs),
                                  job_id=keys.start_job_id(refs), result_ttl=RESULT_TTL,
                                  failure_ttl=FAILURE_TTL,
                                  description=f"start {len(refs)} pod(s) on {node}")
        node_queue(raw, keys, node).enqueue_many([data], pipeline=pipe)
    pipe.execute()
    return len(by_node)
