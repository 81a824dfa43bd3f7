"""The rq job that starts a pod, run by the ``kuota worker`` of the pod's node.

rq calls :func:`start_pods` inside the worker process (kuota's workers are
rq ``SimpleWorker``\\ s: they do not fork per job), where the node's
:class:`~kuota.service.supervisor.PodSupervisor` is registered under
(prefix, node). The job returns as soon as the processes are started — the
pods then live on under the supervisor while the worker takes the next job,
so one worker runs as many pods at once as its node's capacity allows.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kuota.service.jobs import START_PODS, decode
from kuota.service.supervisor import PodSupervisor

#: A no-op job that wakes a worker blocked on its queue (to stop a worker in a thread).
WAKE: Final = "kuota.service.pod.wake"

#: The only functions a kuota worker runs, whatever a job in its queue names.
TASKS: Final = frozenset({START_PODS, WAKE})

_LOCK = threading.Lock()
_SUPERVISORS: dict[tuple[str, str], PodSupervisor] = {}


def register(prefix: str, node: str, supervisor: PodSupervisor) -> None:
    with _LOCK:
        _SUPERVISORS[(prefix, node)] = supervisor


def unregister(prefix: str, node: str) -> None:
    with _LOCK:
        _SUPERVISORS.pop((prefix, node), None)


def start_pods(jobs: Sequence[Mapping[str, Any]],
               gangs: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """rq entry point: start the pods described by ``jobs`` on this worker's node (``gangs``:
    the nodes of each pod's gang, by gang; see :func:`kuota.service.jobs.encode`).

    Returns the store's answer for each (``ok``, or why it did not start).
    """
    pods = decode(jobs, gangs)
    nodes = {(pod.prefix, pod.node) for pod in pods}
    if len(nodes) != 1:
        raise ValueError(f"one start job must be for one node, got {sorted(nodes)}")
    [(prefix, node)] = nodes
    with _LOCK:
        supervisor = _SUPERVISORS.get((prefix, node))
    if supervisor is None:
        raise RuntimeError(f"pods for node {node} (prefix {prefix}) reached a process where "
                           "no kuota worker serves that node; pods must be run by "
                           "`kuota worker`, not by a plain rq worker")
    return supervisor.submit_many(pods)


def wake() -> str:
    return "awake"
