"""Workloads in Redis: submission, the scheduler's decisions, cancellation, history.

A workload is one hash (see :mod:`queueing.store.keys`) whose ``state`` moves
only through :mod:`quota.lifecycle` transitions, inside Lua scripts. Writers:

* users submit and cancel (not fenced; checked against state and attempt);
* the active scheduler admits, places, evicts, rejects and annotates pending
  reasons (fenced by its lease, see :mod:`queueing.store.lease`);
* workers report pods (see :mod:`queueing.store.pods`), which may finish or
  requeue the workload.

The *attempt* counts admissions. Pods are named by attempt, and every write
that acts on pods names the attempt it read, so a report or a decision about
an earlier run can never touch a later one.

Decisions are batched: :meth:`WorkloadStore.admit_many` and
:meth:`WorkloadStore.place_many` persist a scheduling round's decisions with one
script call per chunk of requests (:data:`CHUNK` of them, or as many gangs as
hold :data:`CHUNK_PODS` pods; the chunks in one pipeline). A call is atomic and
checks the lease once; it applies its requests one after the other, each with the
checks and the answer it would have on its own.

Reads of many workloads (:meth:`WorkloadStore.get_many`, ``specs``) are one
``read_many`` script call per :data:`READ_CHUNK` keys rather than a pipeline
of one HMGET per key: the active scheduler re-reads every workload the event
stream names, and redis-py spends far more CPU packing and answering N
commands than one (15 -> 8 µs of the client's CPU per record,
benchmarks/store_reads.py). A Redis user that may only read runs no scripts:
its store reads with the pipeline instead.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from queueing.store import compact, digests
from queueing.store.errors import Conflict, NotFound, outcome
from queueing.store.events import EVENTS_MAXLEN
from queueing.store.indexes import WorkloadIndexes
from queueing.store.keys import Keys, PodRef
from queueing.store.records import WorkloadRecord, admission_to_json, vector_to_json
from queueing.store.scripts import Scripts, Sent, text
from quota.lifecycle import State
from quota.resources import ResourceVector
from quota.values import value
from quota.workload import Admission

#: Longest message stored with a quarantined workload: an error may quote the input, and
#: the input may be huge.
MESSAGE_MAX: Final = 2000
#: Purged submission ids kept per namespace, to tell them from lost ones.
PURGED_KEPT: Final = 100_000
#: Most requests one admit or place call carries (each call holds Redis a few ms at most).
CHUNK: Final = 250
#: Most pods one place call carries, unless one gang alone has more (never split).
CHUNK_PODS: Final = 500

#: Every field but ``spec``: what a status read needs.
_STATUS_FIELDS = ("key", "state", "queue", "priority", "created", "queued_at", "attempt",
                  "outcome", "reason", "message", "cq", "admission", "admitted_at", "placement",
                  "pods", "pods_done", "failures", "backoff_limit", "finished_at", "submission",
                  "origin", "after", "shape", "spec_sum")
#: What changes while a workload lives, for a reader that knows it already.
_CHANGE_FIELDS = tuple(f for f in _STATUS_FIELDS
                       if f not in ("admission", "created", "shape", "spec_sum"))
#: Every field a record is made of (``WorkloadRecord.from_hash`` reads no other).
_RECORD_FIELDS = (*_STATUS_FIELDS, "spec", "dispatch")
#: Most pod keys (and as many log keys) the retention deletes with one workload.
PURGE_PODS_MOST: Final = 100_000
#: Most workloads one ``read_many`` call reads (larger reads are sent as several calls).
READ_CHUNK: Final = 2_000
#: Most admission encodings the store keeps for reuse (all are let go when full).
ADMISSIONS_KEPT: Final = 4_096


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    key: str
    spec: Mapping[str, Any]
    queue: str
    priority: int
    backoff_limit: int
    submission: str


@dataclass(frozen=True, slots=True)
class PreparedSubmission:
    """A workload ready to be stored (:meth:`WorkloadStore.prepare`): the submit script's
    keys and arguments but the time."""

    keys: list[str]
    key: str
    submission: str
    fields: list[object]

    def call(self, now: float) -> tuple[list[str], list[object]]:
        return self.keys, [self.key, self.submission, now, EVENTS_MAXLEN, *self.fields]


@dataclass(frozen=True, slots=True)
class AdmitRequest:
    key: str
    attempt: int  # the attempt the scheduler last read (the new one is attempt + 1)
    admission: Admission
    pods: int
    decision: str
    #: False: only reserve quota (admission checks pending).
    admit: bool = True


@value
class PodPlacement:
    ref: PodRef
    node: str
    pod_set: str
    requests: ResourceVector
    #: The node's epoch the placement was computed for (refused if it changed).
    epoch: int


@value
class PlaceRequest:
    key: str
    attempt: int
    pods: tuple[PodPlacement, ...]


class WorkloadStore:
    def __init__(self, redis: Any, keys: Keys, scripts: Scripts, indexes: WorkloadIndexes, *,
                 refused: type[Exception] = PermissionError) -> None:
        self._r = redis
        self._keys = keys
        self._scripts = scripts
        self._indexes = indexes
        #: What the client raises when Redis refuses this user a command (redis-py's
        #: NoPermissionError, passed in by :class:`~queueing.store.store.Store`: only that
        #: module of the package imports redis).
        self._refused = refused
        #: False once Redis refused this user a read script (see :meth:`_read`).
        self._scripted_reads = True
        #: Admissions as stored (JSON), by what they are made of: a round admits many
        #: alike (one queue, one flavor, one shape), and encoding each was a twentieth of
        #: the leader's round (benchmarks/leader_step.py).
        self._admission_json: dict[tuple[object, ...], str] = {}

    # -- users -------------------------------------------------------------------
    def submit(self, key: str, *, spec: Mapping[str, Any], queue: str, priority: int,
               backoff_limit: int, submission: str, now: float) -> bool:
        """Store a new Pending workload; False if this very submission was stored before.

        Raises :class:`~queueing.store.errors.AlreadyExists` for a live workload of that name.
        """
        [prepared] = self.prepare([SubmitRequest(key, spec, queue, priority, backoff_limit,
                                                 submission)])
        status = self._scripts.run("submit", *prepared.call(now))
        return outcome(status, f"workload {key}") != "again"

    def submit_many(self, requests: Sequence[SubmitRequest], now: float) -> list[str]:
        """Store many new workloads in one pipeline (a job array, a benchmark's arrivals);
        one status each: ``ok``, ``ok:again`` or ``exists:<State>``."""
        return self.submit_prepared(self.prepare(requests), now)

    def prepare(self, requests: Sequence[SubmitRequest]) -> list[PreparedSubmission]:
        """What storing each workload takes besides the time (the canonical spec and its
        digests): made ahead by a client that must then submit at given times."""
        return [self._prepared(r) for r in requests]

    def submit_prepared(self, prepared: Sequence[PreparedSubmission], now: float) -> list[str]:
        """:meth:`submit_many` of workloads :meth:`prepare` made ready."""
        return self._scripts.batch("submit", [p.call(now) for p in prepared])

    def _prepared(self, r: SubmitRequest) -> PreparedSubmission:
        text = digests.canonical(r.spec)
        fields: list[object] = [
            "spec", text, "spec_sum", digests.digest(text), "shape", digests.shape(r.spec),
            "queue", r.queue, "priority", r.priority, "backoff_limit", r.backoff_limit,
            "reason", "Pending", "message", "waiting for the scheduler", "outcome", "",
            "admission", "", "cq", "", "placement", "", "decision", "",
        ]
        k = self._keys
        return PreparedSubmission(
            [k.workload(r.key), k.workloads, k.history(r.key), k.events,
             k.workloads_in(r.key.partition("/")[0]), k.unfinished, k.finished],
            r.key, r.submission, fields)

    def cancel(self, key: str, *, now: float, message: str = "cancelled by user") -> None:
        """Finish the workload as Cancelled and stop its pods (retries if it moves meanwhile)."""
        for _ in range(20):
            record = self.get(key)
            k = self._keys
            status = self._scripts.run(
                "cancel", [k.workload(key), k.history(key), k.events, k.unfinished,
                           k.finished, *(k.pod(ref) for ref in record.pod_refs())],
                [key, record.attempt, now, EVENTS_MAXLEN, message])
            if not status.startswith("stale:"):
                outcome(status, f"workload {key}")
                return
        raise Conflict(f"workload {key}: kept changing while being cancelled")

    # -- reads -------------------------------------------------------------------
    def find(self, key: str) -> WorkloadRecord | None:
        h: dict[str, str] = self._r.hgetall(self._keys.workload(key))
        return WorkloadRecord.from_hash(key, h) if h else None

    def get(self, key: str) -> WorkloadRecord:
        record = self.find(key)
        if record is None:
            raise NotFound(f"workload {key}: not found")
        return record

    def get_many(self, keys: Iterable[str], *, spec: bool = True,
                 admission: bool = True) -> dict[str, WorkloadRecord]:
        """The named workloads that exist, in one round trip per :data:`READ_CHUNK`;
        ``spec=False`` leaves the (largest) field out, ``admission=False`` the admission
        too (a reader that holds it already need not decode it again)."""
        keys = list(keys)
        fields = _RECORD_FIELDS if spec else _STATUS_FIELDS if admission else _CHANGE_FIELDS
        return _records(keys, fields, self._read(keys, fields, whole=spec), whole=spec)

    def send_reads(self, known: Sequence[str], new: Sequence[str], *,
                   skip: Collection[str] = ()) -> RecordsRead:
        """What :meth:`get_many` reads of ``known`` (``spec=False, admission=False``) and of
        ``new`` (everything), sent at once and read later: Redis reads while the caller
        works (a scheduler reconciling the workloads it read before). Read the records from
        the :class:`RecordsRead` in a ``with`` block.

        ``skip``: states in which a ``known`` workload is not read: it is left out of the
        records, as one that is gone (Redis only reads its state). A hash without a state
        is still read, and found corrupt."""
        if not known and not new:
            return RecordsRead(known, new, ready={})
        if not self._scripted_reads:  # (a user that may not run scripts reads now)
            return RecordsRead(known, new, ready={
                **{k: r for k, r in self.get_many(known, spec=False, admission=False).items()
                   if r.state.value not in skip},
                **self.get_many(new)})
        skipping = [len(skip), *skip]
        calls = [([self._keys.workload(k) for k in keys[start:start + READ_CHUNK]],
                  [*head, *fields])
                 for keys, head, fields in ((known, skipping, _CHANGE_FIELDS),
                                            (new, [0], _RECORD_FIELDS))
                 for start in range(0, len(keys), READ_CHUNK)]
        return RecordsRead(known, new, sent=self._scripts.send("read_many", calls))

    def states(self, keys: Sequence[str]) -> list[tuple[str | None, str | None]]:
        """The stored (state, attempt) of each workload, in order ((None, None) where there
        is no such workload): what a resync compares (:mod:`kuota.service.resync`)."""
        return [(values[0], values[1]) if values else (None, None)
                for values in self._read(keys, ("state", "attempt"), whole=False)]

    def specs(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored manifests (JSON) of the named workloads."""
        keys = list(keys)
        answers = self._read(keys, ("spec",), whole=False)
        return {key: values[0] for key, values in zip(keys, answers, strict=True)
                if values and values[0]}

    def _read(self, keys: Sequence[str], fields: Sequence[str], *,
              whole: bool) -> list[list[str | None] | None]:
        """``fields`` of each workload: None where there is no such hash — or, for a
        partial read (not ``whole``) by a user that may not run scripts, all None.

        One ``read_many`` call per :data:`READ_CHUNK` keys (Redis is never held long).
        A Redis user limited to reading (a namespace's submitter, the dashboard's
        read-only user: docs/redis-mode.md, docs/dashboard.md) may not run scripts;
        its store reads with plain commands instead, from the first refusal on.
        """
        if self._scripted_reads:
            try:
                answers: list[list[str | None] | None] = []
                for start in range(0, len(keys), READ_CHUNK):
                    hashes = [self._keys.workload(k) for k in keys[start:start + READ_CHUNK]]
                    answers += self._scripts.read("read_many", hashes, [0, *fields])
                return answers
            except self._refused:
                self._scripted_reads = False
        pipe = self._r.pipeline(transaction=False)
        for key in keys:
            if whole:
                pipe.hgetall(self._keys.workload(key))
            else:
                pipe.hmget(self._keys.workload(key), fields)
        if not whole:
            return list(pipe.execute())
        return [[h.get(f) for f in fields] if h else None for h in pipe.execute()]

    def keys(self) -> list[str]:
        """Every workload key, oldest submission first."""
        return [str(k) for k in self._r.zrange(self._keys.workloads, 0, -1)]

    def all(self) -> list[WorkloadRecord]:
        found = self.get_many(self.keys())
        return list(found.values())

    def keys_in(self, namespace: str) -> list[str]:
        """The workloads submitted in ``namespace`` (readable by its submitters)."""
        return [str(k) for k in self._r.zrange(self._keys.workloads_in(namespace), 0, -1)]

    def index_namespaces(self) -> int:
        """Put every stored workload in its namespace's index, once per store (a store
        written before the index existed); returns how many were indexed."""
        k = self._keys
        if self._r.exists(k.namespace_index_marker):
            return 0
        entries = self._r.zrange(k.workloads, 0, -1, withscores=True)
        pipe = self._r.pipeline(transaction=False)
        for key, score in entries:
            pipe.zadd(k.workloads_in(str(key).partition("/")[0]), {key: score}, nx=True)
        pipe.set(k.namespace_index_marker, "1")
        pipe.execute()
        return len(entries)

    def records_not_in(self, states: Collection[str], keys: Sequence[str] | None = None, *,
                       spec: bool = True, chunk: int = READ_CHUNK) -> dict[str, WorkloadRecord]:
        """The workloads (every one, oldest first, or those of ``keys``) whose state is not
        one of ``states``, spec included unless ``spec=False``, dispatch decision left out
        (only ``kuota why`` reads that, through :meth:`get`). The states are compared in
        Redis: a scheduler's rebuild never receives the many finished workloads a pool
        retains. A hash without a state is read (a corrupt record, as :meth:`get_many`
        and a running leader find it). Each call reads ``chunk`` hashes, so Redis is never
        held for long."""
        keys = self.keys() if keys is None else keys
        fields = [*_STATUS_FIELDS, "spec"] if spec else list(_STATUS_FIELDS)
        found: dict[str, WorkloadRecord] = {}
        for start in range(0, len(keys), chunk):
            part = keys[start:start + chunk]
            answers = self._scripts.read("read_many", [self._keys.workload(k) for k in part],
                                         [len(states), *states, *fields])
            for key, values in zip(part, answers, strict=True):
                if values:
                    found[key] = WorkloadRecord.from_hash(key, _named(fields, values))
        return found

    def unfinished(self, keys: Sequence[str] | None = None, *,
                   spec: bool = True) -> dict[str, WorkloadRecord]:
        """The workloads (every one, oldest first, or those of ``keys``) not finished, as
        :meth:`records_not_in` reads them: listing what runs costs the same whether the
        store retains a week of finished workloads or none. A user that may not run
        scripts reads every record and drops the finished ones here."""
        if keys is None:
            keys = self._indexes.unfinished_keys()
        if self._scripted_reads:
            try:
                return self.records_not_in((State.FINISHED,), keys, spec=spec)
            except self._refused:
                self._scripted_reads = False
        return {k: r for k, r in self.get_many(keys, spec=spec).items()
                if r.state is not State.FINISHED}

    def count(self) -> int:
        """How many workloads the store holds, finished ones included."""
        return int(self._r.zcard(self._keys.workloads))

    def history(self, key: str) -> list[dict[str, Any]]:
        """The workload's history entries, oldest first. A line that is no JSON object
        (written around kuota) reads as an ``Unreadable`` entry saying so, in its place."""
        history = self._keys.history(key)
        return [_history_entry(history, i, line)
                for i, line in enumerate(self._r.lrange(history, 0, -1))]

    # -- the scheduler (fenced) ----------------------------------------------------
    def admit_many(self, holder: str, requests: Sequence[AdmitRequest],
                   now: float) -> list[str]:
        """Persist admissions; one status per request (``ok:<attempt>`` when stored)."""
        return self._scripts.batch_lists("admit", self._admit_calls(holder, requests, now))

    def send_admit_many(self, holder: str, requests: Sequence[AdmitRequest],
                        now: float) -> Sent:
        """:meth:`admit_many` without waiting: the statuses are read from the
        :class:`~queueing.store.scripts.Sent` (``with ... as sent: ... sent.statuses()``)."""
        return self._scripts.send("admit", self._admit_calls(holder, requests, now))

    def _admit_calls(self, holder: str, requests: Sequence[AdmitRequest],
                     now: float) -> list[tuple[list[str], list[object]]]:
        k = self._keys
        calls = []
        for start in range(0, len(requests), CHUNK):
            keys = [k.lease, k.events]
            args: list[object] = [holder, now]
            for r in requests[start:start + CHUNK]:
                keys += [k.workload(r.key), k.history(r.key)]
                args += [r.attempt, self._admission_text(r.admission),
                         r.admission.cluster_queue, r.pods, r.decision, r.admit]
            calls.append((keys, args))
        return calls

    def _admission_text(self, admission: Admission) -> str:
        key = (admission.cluster_queue, admission.borrowing, admission.cluster, *(
            (ps.name, ps.count, tuple(ps.flavors.items()), tuple(ps.usage.items()),
             ps.topology_levels, ps.topology, ps.nodes) for ps in admission.pod_sets))
        text = self._admission_json.get(key)
        if text is None:
            if len(self._admission_json) >= ADMISSIONS_KEPT:
                self._admission_json.clear()
            text = self._admission_json[key] = admission_to_json(admission)
        return text

    def place_many(self, holder: str, requests: Sequence[PlaceRequest],
                   now: float) -> list[str]:
        """Persist gang placements (all pods of a gang or none); one status per request."""
        return self._scripts.batch_lists("place", self._place_calls(holder, requests, now))

    def send_place_many(self, holder: str, requests: Sequence[PlaceRequest],
                        now: float) -> Sent:
        """:meth:`place_many` without waiting: the statuses are read from the
        :class:`~queueing.store.scripts.Sent` (``with ... as sent: ... sent.statuses()``)."""
        return self._scripts.send("place", self._place_calls(holder, requests, now))

    def _place_calls(self, holder: str, requests: Sequence[PlaceRequest],
                     now: float) -> list[tuple[list[str], list[object]]]:
        k = self._keys
        calls: list[tuple[list[str], list[object]]] = []
        gangs = pods = 0
        for r in requests:
            if not calls or gangs == CHUNK or (pods and pods + len(r.pods) > CHUNK_PODS):
                calls.append(([k.lease, k.events], [holder, now]))
                gangs = pods = 0
            keys, args = calls[-1]
            keys += [k.workload(r.key), k.history(r.key)]
            args += [r.attempt, compact.dumps([p.node for p in r.pods]),
                     len(r.pods)]
            for p in r.pods:
                keys += [k.pod(p.ref), k.node(p.node), k.node_pods(p.node)]
                args += [p.ref.id, p.node, p.pod_set, vector_to_json(p.requests), p.epoch]
            gangs += 1
            pods += len(r.pods)
        return calls

    def settle(self, holder: str, record: WorkloadRecord, *, event: str, reason: str,
               message: str, queued_at: float, now: float, after: str = "requeue") -> str:
        """A decision on the workload's hold on quota, as a status: ``stop`` an attempt
        holding quota (Evicting until its pods are gone, then ``after``: requeue or
        deactivate), ``evict`` at once (a dispatched copy), ``deactivate`` a waiting
        workload, or ``activate`` an Inactive one."""
        if event not in ("stop", "evict", "deactivate", "activate"):
            raise ValueError(f"settle: event must be stop, evict, deactivate or activate, "
                             f"got {event!r}")
        if after not in ("requeue", "deactivate"):
            raise ValueError(f"settle: after must be requeue or deactivate, got {after!r}")
        k = self._keys
        return self._scripts.run(
            "settle", [k.lease, k.workload(record.key), k.history(record.key), k.events,
                       *(k.pod(ref) for ref in record.pod_refs())],
            [holder, record.attempt, event, reason, message, now, queued_at, after])

    def stopped_many(self, holder: str, records: Sequence[WorkloadRecord],
                     now: float) -> list[str]:
        """Complete the evictions of Evicting workloads whose pods are all gone, one status
        each: ``ok:<state>`` (Pending, Inactive or Finished: the quota is released),
        ``running`` (a pod still holds its node), ``state:``/``stale:``/``missing``."""
        k = self._keys
        return self._scripts.batch("stopped", [
            ([k.lease, k.workload(r.key), k.history(r.key), k.events, k.unfinished,
              k.finished, *(k.pod(ref) for ref in r.pod_refs())],
             [holder, r.attempt, now, r.key, EVENTS_MAXLEN]) for r in records])

    def reject(self, holder: str, key: str, *, message: str, now: float) -> str:
        k = self._keys
        return self._scripts.run("reject", [k.lease, k.workload(key), k.history(key), k.events,
                                            k.unfinished, k.finished], [holder, message, now, key])

    def quarantine(self, holder: str, key: str, *, message: str, now: float,
                   pods: Iterable[PodRef] = ()) -> str:
        """Set the workload aside as Invalid with ``message`` (its ``pods`` asked to stop):
        ``ok``, ``state:<State>`` (finished or already Invalid), ``missing`` or ``fenced``."""
        k = self._keys
        return self._scripts.run(
            "quarantine", [k.lease, k.workload(key), k.history(key), k.events,
                           *(k.pod(ref) for ref in pods)],
            [holder, key, message[:MESSAGE_MAX], now, EVENTS_MAXLEN])

    def set_reasons(self, holder: str,
                    reasons: Sequence[tuple[str, int, str, str]]) -> str:
        """(key, attempt, reason, message) for pending workloads, in one atomic call."""
        if not reasons:
            return "ok:0"
        args: list[object] = [holder]
        for _, attempt, reason, message in reasons:
            args += [attempt, reason, message]
        return self._scripts.run(
            "set_reasons", [self._keys.lease, *(self._keys.workload(r[0]) for r in reasons)], args)

    def set_dispatch(self, holder: str,
                     decisions: Sequence[tuple[str, int, str]]) -> list[str]:
        """(key, attempt, decision JSON) for workloads holding quota; one status each."""
        k = self._keys
        return self._scripts.batch("set_dispatch", [
            ([k.lease, k.workload(key)], [holder, attempt, doc])
            for key, attempt, doc in decisions])

    def purge_finished(self, holder: str, keys: Sequence[str], *,
                       before: float) -> dict[str, str]:
        """Retention: forget workloads that finished before ``before`` — record, history,
        every attempt's pods and logs. One status per key: ``ok:purged``, ``ok:absent``,
        ``young`` (kept), ``state:<State>`` (not finished: kept), ``dispatched`` (a copy,
        left to its manager) or ``fenced``."""
        k = self._keys
        records = self.get_many(keys)
        calls: list[tuple[list[str], list[object]]] = []
        for key in keys:
            record = records.get(key)
            refs: list[PodRef] = []
            if record is not None and record.state is State.FINISHED:
                # Earlier attempts may have had more pods than the last (partial admission):
                # the spec's full count bounds them all. A record written around kuota may
                # claim absurd counts: past PURGE_PODS_MOST, only the last attempt's pods.
                most = max(record.pods, _spec_pods(record))
                attempts = range(1, record.attempt + 1)
                if len(attempts) * most > PURGE_PODS_MOST:
                    attempts, most = range(record.attempt, record.attempt + 1), record.pods
                refs = [PodRef(key, attempt, index)
                        for attempt in attempts for index in range(min(most, PURGE_PODS_MOST))]
            namespace = key.partition("/")[0]
            calls.append(([k.lease, k.workload(key), k.workloads, k.history(key),
                           k.workloads_in(namespace), k.purged(namespace), k.unfinished,
                           k.finished,
                           *(name for ref in refs for name in (k.pod(ref), k.log(ref)))],
                          [holder, key, before, PURGED_KEPT]))
        return dict(zip(keys, self._scripts.batch("purge_finished", calls), strict=True))

    def lookup(self, wanted: Sequence[tuple[str, str]]) -> list[str]:
        """What became of each (workload key, submission id): ``held`` (the store has that
        submission), ``replaced`` (the key holds a later one), ``purged`` (forgotten by
        retention) or ``unknown`` (no trace: lost with Redis's last writes, if it was
        ever acknowledged)."""
        pipe = self._r.pipeline(transaction=False)
        for key, submission in wanted:
            pipe.hget(self._keys.workload(key), "submission")
            pipe.zscore(self._keys.purged(key.partition("/")[0]), submission)
        answers = pipe.execute()
        out = []
        for (_, submission), held, purged in zip(wanted, answers[::2], answers[1::2],
                                                 strict=True):
            held = text(held) if held is not None else None
            out.append("held" if held == submission else "replaced" if held is not None
                       else "purged" if purged is not None else "unknown")
        return out


class RecordsRead:
    """The records :meth:`WorkloadStore.send_reads` asked for, read when wanted."""

    def __init__(self, known: Sequence[str], new: Sequence[str], *, sent: Sent | None = None,
                 ready: dict[str, WorkloadRecord] | None = None) -> None:
        #: The workloads read without spec and admission, and those read whole.
        self.known, self.new = list(known), list(new)
        self._sent = sent
        self._ready = ready

    def records(self) -> dict[str, WorkloadRecord]:
        """The named workloads that exist (as :meth:`WorkloadStore.get_many` gives them)."""
        if self._ready is None:
            assert self._sent is not None
            answers: list[Any] = [values for answer in self._sent.answers()
                                  for values in answer]
            split = len(self.known)
            self._ready = {
                **_records(self.known, _CHANGE_FIELDS, answers[:split], whole=False),
                **_records(self.new, _RECORD_FIELDS, answers[split:], whole=True)}
        return self._ready

    def discard(self) -> None:
        """Not wanted after all: the answers are read (the connection goes back clean)
        and let go."""
        if self._ready is None and self._sent is not None:
            self._sent.answers()
            self._ready = {}

    def close(self) -> None:
        """Let the answers go unread (the caller failed): the connection is dropped."""
        if self._sent is not None:
            self._sent.close()

    def __enter__(self) -> RecordsRead:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.discard()
        else:
            self.close()


def _records(keys: Sequence[str], fields: Sequence[str],
             answers: Sequence[Sequence[str | None] | None], *,
             whole: bool) -> dict[str, WorkloadRecord]:
    found: dict[str, WorkloadRecord] = {}
    for key, values in zip(keys, answers, strict=True):
        if values is None:
            continue
        h = _named(fields, values)
        # A whole read answers for every hash, as HGETALL would (one without a state
        # reads as corrupt); a partial one only for those holding one of its fields.
        if h or whole:
            found[key] = WorkloadRecord.from_hash(key, h)
    return found


def _named(fields: Sequence[str], values: Sequence[str | None]) -> dict[str, str]:
    """An ``HMGET`` answer as the hash it read (missing fields left out)."""
    return {f: v for f, v in zip(fields, values, strict=True) if v is not None}


def _spec_pods(record: WorkloadRecord) -> int:
    """Pods the stored spec asks for in all (0 if the spec cannot be read)."""
    try:
        pod_sets = record.spec().get("spec", {}).get("podSets") or []
        return sum(int(ps.get("count", 1)) for ps in pod_sets if isinstance(ps, dict))
    except (ValueError, TypeError, AttributeError):
        return 0


def _history_entry(history: str, index: int, line: str) -> dict[str, Any]:
    """One history line as its entry, or an ``Unreadable`` entry naming the line and why."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError) as exc:
        why = f"not JSON: {exc}" if isinstance(exc, ValueError) else "nested too deeply"
    else:
        if isinstance(entry, dict):
            return entry
        why = f"a JSON {type(entry).__name__}, not an object"
    return {"event": "Unreadable", "reason": f"{history} line {index}: {why}"}
