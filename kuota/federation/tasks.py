"""Remote calls as rq tasks: idempotent, retried with backoff, off the operator's loop.

Every call to a member (observe, create a copy, delete a copy) is an rq job on
one queue, ``kuota-federation``. A worker thread inside the operator runs
them (rq's ``SimpleWorker``: no fork, so it works on the embedded fakeredis
too); the operator's loop only enqueues and later collects results, so a
member that hangs or refuses connections delays nothing but its own tasks.

* **Idempotent.** Create is create-if-absent (409 counts as done), delete is
  delete-if-present (404 counts as done), observe changes nothing — so a task
  that ran but whose result was lost can simply run again.
* **One at a time per key.** :meth:`TaskRunner.submit` refuses a second task
  with the key of one still in flight (``create:member:ns/name``...), so a
  slow member never piles up duplicate work.
* **Retries with backoff.** Writes are enqueued with ``Retry(max, interval)``;
  rq puts a failed attempt in its scheduled registry, and the worker thread
  moves due ones back to the queue every poll. Observations are not retried:
  the next periodic observation is the retry, and a failure is what the
  member's health is made of.

Task functions take plain values (a member *spec*: ``{"kind": "Kubernetes",
"kubeconfig": {...}}``) so the rq job pickles without live connections; the
adapter for a spec is made (and its connections cached) in the worker.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rq import Queue, Retry
from rq.job import Job, JobStatus
from rq.scheduler import RQScheduler

from kuota.federation.kubernetes_member import KubernetesMember
from kuota.federation.member import Body, MemberAdapter, Observation
from kuota.service.worker import ThreadNodeWorker

log = logging.getLogger(__name__)

QUEUE: Final = "kuota-federation"
#: Pause (whole seconds: rq schedules retries by the second) before each retry of a write.
BACKOFF: Final = (1, 2, 4, 8)
RETRIES: Final = 4
#: Longest a remote call may run before rq gives up on it.
TASK_TIMEOUT: Final = 60


class MemberSpecError(ValueError):
    """A member spec the tasks cannot connect with (the message says why)."""


def adapter(spec: Body) -> MemberAdapter:
    """The adapter for a member spec (built in the worker, from plain values)."""
    kind = spec.get("kind")
    if kind == "Kubernetes":
        return KubernetesMember(spec["kubeconfig"])
    raise MemberSpecError(f"no member adapter for kind {kind!r}")


# -- the tasks (module-level, so rq can import them by name) ----------------------------------

def observe(spec: Body, origin: str) -> Observation:
    return adapter(spec).observe(origin)


def create(spec: Body, body: Body) -> str:
    return adapter(spec).create(body)


def delete(spec: Body, namespace: str, name: str) -> str:
    return adapter(spec).delete(namespace, name)


def wake() -> None:
    """A no-op that wakes the worker blocked on the queue (to stop it)."""


# -- running them -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Outcome:
    """A task that ended: its key, whether it succeeded, and its result or error text."""

    key: str
    ok: bool
    value: Any = None
    error: str = ""


class TaskRunner:
    """Enqueues tasks, runs them in a worker thread, hands back their outcomes."""

    def __init__(self, connection: Any, *, queue: str = QUEUE, retries: int = RETRIES,
                 backoff: Sequence[int] = BACKOFF, poll: float = 0.1) -> None:
        self.connection = connection
        self.queue = Queue(queue, connection=connection)
        self.retries = retries
        self.backoff = [max(1, int(b)) for b in backoff]
        self.poll = poll
        self._jobs: dict[str, Job] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._worker: ThreadNodeWorker | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._threads:
            return
        self._stop.clear()
        self._worker = ThreadNodeWorker([self.queue], connection=self.connection,
                                        name=f"kuota-federation-{uuid.uuid4().hex[:8]}",
                                        worker_ttl=16)
        for target, name in ((self._work, "federation-worker"),
                             (self._schedule, "federation-retries")):
            thread = threading.Thread(target=target, daemon=True, name=name)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._worker is not None:
            # rq stops on a signal; a thread gets none. Flag it, then wake it with a no-op.
            self._worker._stop_requested = True
            self.queue.enqueue(wake, result_ttl=0)
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()
        self._jobs.clear()

    def _work(self) -> None:
        assert self._worker is not None
        try:
            self._worker.work(burst=False, logging_level="WARNING")
        except Exception:
            log.exception("the federation task worker stopped")

    def _schedule(self) -> None:
        scheduler = RQScheduler([self.queue], connection=self.connection)
        scheduler.prepare_registries([self.queue.name])
        while not self._stop.wait(self.poll):
            try:
                scheduler.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]
            except Exception:
                log.exception("could not move due retries back to the queue")

    # -- tasks ----------------------------------------------------------------------------------
    def busy(self, key: str) -> bool:
        return key in self._jobs

    def submit(self, key: str, func: Callable[..., Any], *args: Any, retry: bool = True) -> bool:
        """Enqueue ``func(*args)`` unless a task with ``key`` is still in flight."""
        if key in self._jobs:
            return False
        options: dict[str, Any] = {"job_timeout": TASK_TIMEOUT, "result_ttl": 300,
                                   "failure_ttl": 300, "description": key}
        if retry and self.retries > 0:
            options["retry"] = Retry(max=self.retries, interval=list(self.backoff))
        self._jobs[key] = self.queue.enqueue(func, *args, **options)
        return True

    def collect(self) -> list[Outcome]:
        """The tasks that ended since the last call (successes, and failures after retries)."""
        ended = []
        for key, job in list(self._jobs.items()):
            try:
                status = job.get_status(refresh=True)
            except Exception as exc:  # the job expired or the store is gone: it ended badly
                ended.append(Outcome(key, False, error=f"task lost: {exc}"))
                del self._jobs[key]
                continue
            if status == JobStatus.FINISHED:
                ended.append(Outcome(key, True, job.return_value()))
            elif status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
                result = job.latest_result()
                error = (result.exc_string or "") if result is not None else ""
                ended.append(Outcome(key, False, error=_last_line(error) or str(status)))
            else:
                continue
            del self._jobs[key]
        return ended


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""
