"""The rq job that starts a pod, run by the ``kuota worker`` of the pod's node.

rq calls :func:`start_pod` inside the worker process (kuota's workers are
rq ``SimpleWorker``\\ s: they do not fork per job), where the node's
:class:`~kuota.service.supervisor.PodSupervisor` is registered under
(prefix, node). The job returns as soon as the process is started — the pod
then lives on under the supervisor while the worker takes the next job, so
one worker runs as many pods at once as its node's capacity allows.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from kuota.service.jobs import PodJob
from kuota.service.supervisor import PodSupervisor

#: A no-op job that wakes a worker blocked on its queue (to stop a worker in a thread).
WAKE: Final = "kuota.service.pod.wake"

_LOCK = threading.Lock()
_SUPERVISORS: dict[tuple[str, str], PodSupervisor] = {}


def register(prefix: str, node: str, supervisor: PodSupervisor) -> None:
    with _LOCK:
        _SUPERVISORS[(prefix, node)] = supervisor


def unregister(prefix: str, node: str) -> None:
    with _LOCK:
        _SUPERVISORS.pop((prefix, node), None)


def start_pod(job: Mapping[str, Any]) -> str:
    """rq entry point: start the pod described by ``job`` on this worker's node."""
    pod = PodJob.from_dict(job)
    with _LOCK:
        supervisor = _SUPERVISORS.get((pod.prefix, pod.node))
    if supervisor is None:
        raise RuntimeError(f"pod {pod.pod_id} is for node {pod.node} (prefix {pod.prefix}), "
                           "which no kuota worker in this process serves; pods must be run by "
                           "`kuota worker`, not by a plain rq worker")
    return supervisor.submit(pod)


def wake() -> str:
    return "awake"
