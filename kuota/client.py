"""The Python API of Redis mode: ``kuota.Client(redis_url)``.

::

    import kuota

    client = kuota.Client("redis://localhost:6379")  # None: REDIS_URL, else localhost:6379/0
    client.apply("queues.yaml")
    run = client.submit(["python", "train.py"], queue="team-a/default",
                        requests={"cpu": 2, "nvidia.com/gpu": 1}, count=2)
    status = run.wait(timeout=600)                       # a WorkloadStatus
    print(status.outcome, run.logs())

Everything goes through the store: a submission is checked
(:mod:`kuota.service.submission`) and written in one atomic step, and the
scheduler service picks it up from there. The client never decides anything.

A submission rides out a Redis restart or failover: every round trip it makes —
reading the rules it is checked against, storing it, or posting it as a request and
reading the answer — is tried again while the connection fails, all within one
window (:attr:`Client.submit_retry_for`). Trying again is safe because each
submission carries one id from its first try to its last, and the store (or the
scheduler taking a request) stores a submission id once.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from kuota.service.connection import Connection, connect
from queueing.store import (
    NodeRecord,
    NotFound,
    Outcome,
    PodRecord,
    PodRef,
    Store,
    StoreError,
    WorkloadRecord,
)
from queueing.store.objects import KINDS as STORED_KINDS
from quota.lifecycle import State

if TYPE_CHECKING:
    from kuota.service import views
    from kuota.service.submission import Submission
    from quota import api

T = TypeVar("T")

#: Pending reasons that may mean "never": :meth:`WorkloadHandle.wait` checks them against the
#: stored queues (admission.inadmissible.REASONS, named here: the CLI imports no core).
NEVER_FIT_REASONS = frozenset({"LocalQueueNotFound", "ClusterQueueNotFound",
                               "NoMatchingFlavor", "ExceedsMaxQuota"})


def retried(deadline: float, call: Callable[[], T]) -> T:
    """``call()``, tried again while the connection to Redis fails, until ``deadline``
    (``time.monotonic()``), backing off from 0.05 s to 1 s; then its error is raised.
    Only for calls that are safe to repeat (a read, or a write of a submission id)."""
    pause = 0.05
    while True:
        try:
            return call()
        except (RedisConnectionError, RedisTimeoutError):
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(pause, left))
            pause = min(1.0, pause * 2)


@dataclass(frozen=True)
class PodStatus:
    index: int
    node: str
    phase: str
    exit_code: int | None


@dataclass(frozen=True)
class WorkloadStatus:
    key: str
    state: str
    outcome: str
    reason: str
    message: str
    cluster_queue: str
    attempt: int
    pods: list[PodStatus] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.state == State.FINISHED

    @property
    def succeeded(self) -> bool:
        return self.outcome == Outcome.SUCCEEDED


class NeverFitsWarning(UserWarning):
    """A submitted workload can never be admitted as the queues are configured: it was
    stored and waits, set aside, until a change of the queues lets it fit."""


class NeverFits(StoreError):
    """:meth:`WorkloadHandle.wait` on a workload that can never be admitted as the queues
    are configured: waiting longer would not help. It stays queued (inadmissible)."""

    def __init__(self, key: str, reason: str, message: str) -> None:
        self.key, self.reason, self.message = key, reason, message
        super().__init__(f"workload {key} can never be admitted as the queues are configured: "
                         f"{reason}: {message}")


@dataclass(frozen=True)
class LostSubmission:
    """A submission the store acknowledged and no longer knows (:meth:`Client.lost`)."""

    key: str
    submission: str
    #: When it was acknowledged (seconds since the epoch).
    at: float


class WorkloadHandle:
    """A submitted workload; every call reads Redis afresh."""

    def __init__(self, client: Client, key: str, *, queued: bool = False,
                 never_fits: tuple[str, str] | None = None) -> None:
        self.client = client
        self.key = key
        #: Sent as a request no scheduler has answered yet: stored once one runs.
        self.queued = queued
        #: (reason, message) when, as submitted, it can never be admitted as the queues are
        #: configured (:func:`admission.inadmissible.never_fits`); None when it may be.
        self.never_fits = never_fits

    def __repr__(self) -> str:
        return f"WorkloadHandle({self.key!r})"

    def record(self) -> WorkloadRecord:
        return self.client.store.workloads.get(self.key)

    def status(self) -> WorkloadStatus:
        record = self.record()
        pods = [p for p in self.client.store.pods.get_many(record.pod_refs()) if p is not None]
        return WorkloadStatus(record.key, record.state.value, record.outcome.value,
                              record.reason, record.message, record.cluster_queue,
                              record.attempt, [_pod_status(p) for p in pods])

    def wait(self, timeout: float | None = None, *, poll: float = 0.1) -> WorkloadStatus:
        """Block until the workload finishes; raises TimeoutError after ``timeout`` seconds,
        and :class:`NeverFits` as soon as it waits for a reason no freed quota cures (its
        LocalQueue or ClusterQueue does not exist, no flavor covers or matches what it asks,
        more than its ClusterQueue can ever get), checked against the stored queues."""
        deadline = None if timeout is None else time.monotonic() + timeout
        checked: tuple[str, str] | None = None
        while True:
            try:
                status = self.status()
            except NotFound:
                if not self.queued:
                    raise self.client.not_found(self.key) from None
                # A request no scheduler has taken yet: it becomes a workload when one does.
                status = WorkloadStatus(self.key, "Requested", "", "Queued",
                                        "waiting for a scheduler to take the request", "", 0, [])
            if status.finished:
                return status
            # Asked again only when the published reason changes (and at the first look
            # when the submission was found never-fitting): the stored queues decide.
            seen = (status.state, status.reason)
            if status.state == State.PENDING and seen != checked and (
                    status.reason in NEVER_FIT_REASONS
                    or (checked is None and self.never_fits is not None)):
                checked = seen
                verdict = self.client.never_fits(self.key)
                if verdict is not None:
                    raise NeverFits(self.key, *verdict)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"workload {self.key} still {status.state} after {timeout}s "
                                   f"({status.reason}: {status.message})")
            time.sleep(poll)

    def logs(self, pod: int | None = None, *, attempt: int | None = None) -> str:
        return self.client.logs(self.key, pod=pod, attempt=attempt)

    def cancel(self) -> None:
        self.client.cancel(self.key)

    def history(self) -> list[dict[str, Any]]:
        return self.client.store.workloads.history(self.key)


def _pod_status(pod: PodRecord) -> PodStatus:
    return PodStatus(pod.ref.index, pod.node, pod.state.value, pod.exit_code)


def workload_key(name: str) -> str:
    """``NAMESPACE/NAME``, or ``NAME`` in namespace default, as the store keys it."""
    return name if "/" in name else f"default/{name}"


class RequestRefused(StoreError):
    """The scheduler refused a namespace-scoped submitter's request (the message says why)."""


class Client:
    """A store's user: ``redis_url`` None means ``REDIS_URL``, else
    ``redis://localhost:6379/0``; ``"embedded"`` is this process's in-memory store.

    A Redis user limited to one namespace (``kuota acl submitter``) may not write the
    records: its submissions and cancellations are sent as requests to the scheduler
    (:mod:`queueing.store.requests`) and wait up to :attr:`request_wait` seconds for the
    answer; a request not answered by then stays queued and is applied when a scheduler
    runs (the handle says ``queued``)."""

    #: Seconds a request of a namespace-scoped submitter waits for the scheduler's answer.
    request_wait = 10.0
    #: Seconds a submission is tried again while the connection to Redis fails.
    submit_retry_for = 10.0

    def __init__(self, redis_url: str | None = None, *, prefix: str = "kuota",
                 connection: Connection | None = None, journal: Path | None = None) -> None:
        """``journal``: a file where every acknowledged submission is noted, so that one the
        store loses (a Redis crash under ``appendfsync everysec``) is named as lost rather
        than not found (:mod:`kuota.service.journal`; the CLI keeps one by default)."""
        self.connection = connection or connect(redis_url, prefix=prefix)
        self.journal = None
        if journal is not None and not self.connection.embedded:
            from kuota.service.journal import Journal

            self.journal = Journal(journal)

    @property
    def store(self) -> Store:
        return self.connection.store

    # -- queue objects -----------------------------------------------------------
    def apply(self, source: str | Path | Iterable[Mapping[str, Any] | api.ApiObject]) -> list[str]:
        """Store queue objects from a YAML file/text or manifests; returns ``Kind/name`` each
        (:meth:`apply_changes` also says what changed).

        Namespace documents set namespace labels (for namespaceSelectors). Every
        object is checked first; nothing is stored if any is invalid.
        """
        return [name for name, _ in self.apply_changes(source)]

    def apply_changes(self, source: str | Path | Iterable[Mapping[str, Any] | api.ApiObject]
                      ) -> list[tuple[str, str]]:
        """:meth:`apply`, returning ``(Kind/name, verdict)`` each, as ``kubectl apply`` says
        it: ``created`` (new), ``configured`` (changed) or ``unchanged`` (the same as stored,
        and not written again: the scheduler has nothing to take up)."""
        manifests, namespaces = self._checked_objects(source)
        verdicts = _apply_verdicts(self.store.objects, manifests, namespaces)
        changed = {name for name, verdict in verdicts if verdict != "unchanged"}
        new = [m for m, (name, _) in zip(manifests, verdicts, strict=False) if name in changed]
        labels = {ns: v for ns, v in namespaces.items() if f"Namespace/{ns}" in changed}
        if new or labels:
            self.store.objects.apply(new, labels)
        return verdicts

    def _checked_objects(self, source: str | Path | Iterable[Mapping[str, Any] | api.ApiObject]
                         ) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]]]:
        """The checked manifests and namespace labels of ``source``; ObjectError naming
        every problem."""
        from quota import api  # here, not at the top: `kuota get` never needs the models

        if isinstance(source, str | Path):
            where, docs = api.read_documents(source)
        else:
            where, docs = "<objects>", [o.to_dict() if isinstance(o, api.ApiObject) else o
                                        for o in source]
        manifests: list[dict[str, Any]] = []
        namespaces: dict[str, dict[str, str]] = {}
        problems: list[api.Problem] = []
        for doc in docs:
            if isinstance(doc, Mapping) and doc.get("kind") == "Namespace":
                meta = doc.get("metadata") or {}
                if not isinstance(meta, Mapping) or not meta.get("name"):
                    problems.append(api.Problem(where, "Namespace", "", "metadata.name",
                                                "is required"))
                    continue
                namespaces[str(meta["name"])] = {str(k): str(v) for k, v in
                                                 (meta.get("labels") or {}).items()}
                continue
            try:
                obj = api.parse_object(doc, source=where)
            except api.ObjectError as exc:
                problems += exc.problems
                continue
            if obj.kind not in STORED_KINDS:
                problems.append(api.Problem(where, obj.kind, obj.metadata.name, "kind",
                                            "not a queue object; submit Workloads with "
                                            "`kuota submit -f`"))
                continue
            manifests.append(obj.to_dict())
        if problems:
            raise api.ObjectError(problems)
        return manifests, namespaces

    def delete(self, kind: str, name: str) -> None:
        self.store.objects.delete(kind, name)

    # -- workloads ----------------------------------------------------------------
    def submit(self, command: Sequence[str] | None = None, *, queue: str | None = None,
               name: str | None = None, count: int = 1,
               requests: Mapping[str, str | int | float] | None = None,
               priority_class: str | None = None, priority: int | None = None,
               backoff_limit: int = 0, env: Mapping[str, str] | None = None,
               workload: Mapping[str, Any] | str | Path | None = None) -> WorkloadHandle:
        """Submit a command (run by ``count`` pods) or a Workload manifest/file.

        Raises :class:`quota.api.ObjectError` naming every problem; nothing is
        stored then.
        """
        from kuota.service import submission
        from quota import api

        if isinstance(command, str):
            # A string is a sequence too: it would be split into one argument per character.
            raise api.ObjectError([api.Problem(
                submission.SOURCE, "Workload", name or "", "command",
                f"must be a list of arguments, e.g. {command.split()!r}, not the string "
                f"{command!r} (kuota never runs a shell)")])
        if workload is not None:
            manifest = _one_workload(workload)
        else:
            if queue is None:
                raise api.ObjectError([api.Problem(submission.SOURCE, "Workload", name or "",
                                                   "queue", "is required (NAMESPACE/LOCALQUEUE)")])
            manifest = submission.from_args(
                list(command or ()), queue=queue, name=name, count=count, requests=requests,
                priority_class=priority_class, priority=priority, backoff_limit=backoff_limit,
                env=env)
        given_queue = queue if workload is not None else None
        # Every round trip from here on is retried within one window (module doc).
        deadline = time.monotonic() + self.submit_retry_for
        rules = retried(deadline, lambda: submission.StoredRules.read(self.store))
        checked = rules.check(manifest, queue=given_queue)
        queues = retried(deadline, lambda: submission.queue_objects(self.store))
        submission_id = uuid.uuid4().hex
        try:
            retried(deadline, lambda: self._store_submission(checked, submission_id))
        except NoPermissionError:
            # A submitter limited to its namespace: the scheduler stores it (module doc).
            answer = self._request(checked.key, "submit", deadline=deadline,
                                   manifest=json.dumps(manifest), queue=given_queue or "",
                                   submission=submission_id)
            if answer is not None:
                self._note(checked.key, submission_id)
            return self._handle(checked, queues, queued=answer is None)
        self._note(checked.key, submission_id)
        return self._handle(checked, queues)

    def _handle(self, checked: Submission, queues: list[Any], *,
                queued: bool = False) -> WorkloadHandle:
        """The handle of a submission, warned about (:class:`NeverFitsWarning`) when it can
        never be admitted as the stored queues (``queues``, read before it was stored) are
        configured."""
        from kuota.service import submission

        verdict = submission.never_fits(queues, checked.manifest, priority=checked.priority)
        never = (verdict.reason, verdict.message) if verdict is not None else None
        if never is not None:
            warnings.warn(NeverFitsWarning(
                f"workload {checked.key} can never be admitted as the queues are "
                f"configured: {never[0]}: {never[1]}"), stacklevel=3)
        return WorkloadHandle(self, checked.key, queued=queued, never_fits=never)

    def never_fits(self, name: str) -> tuple[str, str] | None:
        """(reason, message) when stored workload ``name`` can never be admitted as the
        stored queues are configured; None when it may be (or it no longer waits)."""
        from kuota.service import rebuild, submission

        record = self.store.workloads.get(workload_key(name))
        if record.state is not State.PENDING:
            return None
        verdict = submission.never_fits(submission.queue_objects(self.store),
                                        rebuild.workload_object(record).to_dict(),
                                        priority=record.priority)
        return (verdict.reason, verdict.message) if verdict is not None else None

    def _store_submission(self, checked: Submission, submission_id: str) -> None:
        """Store it. A reply lost with the connection leaves the submission stored or not,
        no one can tell which; the store knows this very submission when it comes again
        (the retry is then a no-op), so retrying can never store the workload twice."""
        self.store.workloads.submit(
            checked.key, spec=checked.manifest, queue=checked.queue,
            priority=checked.priority, backoff_limit=checked.backoff_limit,
            submission=submission_id, now=time.time())

    def _note(self, key: str, submission_id: str) -> None:
        if self.journal is not None:
            from kuota.service.journal import Entry

            self.journal.record(Entry(self._store_id, key, submission_id, time.time()))

    @property
    def _store_id(self) -> str:
        return f"{self.connection.describe()}#{self.connection.prefix}"

    def lost(self, key: str | None = None) -> list[LostSubmission]:
        """Submissions made through this client's journal that the store acknowledged and
        no longer knows — neither held, replaced by a later one, nor purged by retention:
        lost with Redis's last writes. All of them, or ``key``'s."""
        if self.journal is None:
            return []
        latest: dict[str, Any] = {}
        for entry in self.journal.entries(self._store_id):
            if key is None or entry.key == key:
                latest[entry.key] = entry
        entries = list(latest.values())
        fates = self.store.workloads.lookup([(e.key, e.submission) for e in entries])
        return [LostSubmission(e.key, e.submission, e.at)
                for e, fate in zip(entries, fates, strict=True) if fate == "unknown"]

    def not_found(self, key: str) -> NotFound:
        """The error for a workload the store does not know, naming it lost if it was."""
        lost = self.lost(key)
        if not lost:
            return NotFound(f"workload {key}: not found")
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(lost[0].at))
        return NotFound(f"workload {key}: lost — submitted from here at {at} (submission "
                        f"{lost[0].submission}) and acknowledged, but the store has no trace "
                        "of it: Redis lost its last writes in a crash (appendfsync everysec); "
                        "submit it again")

    def _request(self, key: str, op: str, *, deadline: float | None = None,
                 **fields: str) -> dict[str, Any] | None:
        """Ask the scheduler through the namespace's request stream; its answer, or None
        if none came within :attr:`request_wait` (the request stays queued for it).

        Posting is retried until ``deadline`` (default: :attr:`submit_retry_for` from
        now) while the connection fails, under one request id: a post whose reply was
        lost and that is posted again is answered twice under that id, and applied once
        (a submission by its id; a cancellation changes nothing the second time)."""
        namespace = key.partition("/")[0]
        if deadline is None:
            deadline = time.monotonic() + self.submit_retry_for
        request = secrets.token_hex(8)
        retried(deadline, lambda: self.store.requests.post(namespace, op, request=request,
                                                           key=key, **fields))
        answer = self._await_answer(namespace, request, time.monotonic() + self.request_wait)
        if answer is not None and not answer.get("ok"):
            raise RequestRefused(f"{op} {key}: {answer.get('error', 'refused')}")
        return answer

    def _await_answer(self, namespace: str, request: str, until: float
                      ) -> dict[str, Any] | None:
        """The scheduler's answer to ``request``, or None if none came by ``until``; a
        connection that fails meanwhile is asked again (the answer waits in Redis)."""
        while True:
            try:
                answer = self.store.requests.answer(namespace, request)
            except (RedisConnectionError, RedisTimeoutError):
                answer = None
            if answer is not None or time.monotonic() >= until:
                return answer
            time.sleep(0.05)

    def workload(self, name: str) -> WorkloadHandle:
        key = workload_key(name)
        if self.store.workloads.find(key) is None:
            raise self.not_found(key)
        return WorkloadHandle(self, key)

    def workloads(self, namespace: str | None = None, *, finished: bool = True,
                  spec: bool = True) -> list[WorkloadRecord]:
        """Every workload, or those submitted in ``namespace`` (all a submitter limited
        to that namespace may list); ``finished=False`` leaves the finished ones out,
        in Redis (a pool may retain hundreds of thousands of them); ``spec=False`` leaves
        out their manifests (the largest field: a record's ``spec()`` is then empty)."""
        workloads = self.store.workloads
        keys = None if namespace is None else workloads.keys_in(namespace)
        if not finished:  # (every namespace's: from the unfinished index)
            return list(workloads.unfinished(keys, spec=spec).values())
        return list(workloads.get_many(workloads.keys() if keys is None else keys,
                                       spec=spec).values())

    def cancel(self, name: str) -> bool:
        """Cancel; False if a namespace-scoped submitter's request is still queued."""
        key = workload_key(name)
        try:
            self.store.workloads.cancel(key, now=time.time())
        except NoPermissionError:
            self.store.workloads.get(key)  # a name that is not there: NotFound, not a request
            return self._request(key, "cancel", message="cancelled by user") is not None
        return True

    def logs(self, name: str, *, pod: int | None = None, attempt: int | None = None) -> str:
        """Output of one attempt's pods (the current one unless ``attempt`` says; every
        attempt's output is kept until the workload is purged): one pod, or all with a
        header each."""
        record = self.store.workloads.get(workload_key(name))
        current = record.attempt
        if attempt is not None and not 1 <= attempt <= max(current, 1):
            raise NotFound(f"workload {record.key} has no attempt {attempt} (attempts: "
                           f"{', '.join(map(str, range(1, current + 1))) or 'none yet'})")
        chosen = current if attempt is None else attempt
        refs = [PodRef(record.key, chosen, i) for i in range(record.pods)] if chosen else []
        if pod is not None:
            if not 0 <= pod < max(len(refs), 1) or not refs:
                raise NotFound(f"workload {record.key} has no pod {pod} "
                               f"(it has {len(refs)} in attempt {chosen})")
            return self.store.pods.logs(PodRef(record.key, chosen, pod))
        if len(refs) == 1:
            return self.store.pods.logs(refs[0])
        return "".join(f"==> pod {ref.index} <==\n{self.store.pods.logs(ref)}" for ref in refs)

    # -- cluster state ----------------------------------------------------------------
    def nodes(self) -> list[NodeRecord]:
        return self.store.nodes.all()

    def snapshot(self) -> views.Snapshot:
        """ClusterQueue usage, LocalQueues and pending positions, as the engine sees them."""
        from kuota.service import views  # the engine it rebuilds is heavy; only views need it

        return views.snapshot(self.store)


def _one_workload(source: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    from quota import api

    if isinstance(source, Mapping):
        return dict(source)
    where, docs = api.read_documents(source)
    workloads = [d for d in docs if isinstance(d, Mapping)]
    if len(workloads) != 1 or workloads[0].get("kind") != "Workload":
        raise api.ObjectError([api.Problem(where, "Workload", "", "",
                                           "expected exactly one Workload document")])
    return dict(workloads[0])


def _apply_verdicts(objects: Any, manifests: Sequence[Mapping[str, Any]],
                    namespaces: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """``(Kind/name, created|configured|unchanged)`` for each manifest, then each
    namespace, against what ``objects`` (the store's ObjectStore) holds; an object given
    twice is judged against its first copy, as two applies in a row would be."""
    from queueing.store.objects import object_name

    stored: dict[str, dict[str, Any]] = {}
    out = []
    for manifest in manifests:
        kind = str(manifest.get("kind"))
        held = stored.setdefault(kind, objects.manifests(kind))
        name = object_name(kind, manifest)
        out.append((f"{kind}/{name}", _verdict(held.get(name), manifest)))
        held[name] = json.loads(json.dumps(manifest))
    held_labels = objects.namespaces() if namespaces else {}
    for ns, labels in namespaces.items():
        out.append((f"Namespace/{ns}", _verdict(held_labels.get(ns), labels)))
    return out


def _verdict(held: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> str:
    if held is None:
        return "created"
    return "unchanged" if json.loads(json.dumps(wanted)) == held else "configured"
