"""Typed views of the store's hashes, and the JSON form of an admission.

Redis hands back flat ``str -> str`` hashes; everything else reads these
frozen records instead, so a field's spelling and type live in one place.
Parsing is total: a missing field takes its empty value, so a record written
by an older version still reads.

Pods have a small lifecycle of their own (:class:`PodPhase`)::

    Placed --start--> Running --exit 0--> Succeeded
       |                 |  --exit n--> Failed
       |                 +--stopped--> Stopped   (terminated on request)
       +--not started--> Stopped
    Placed/Running --node lost--> Lost

Only *live* pods (Placed, Running) hold capacity on their node.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from queueing.store import compact
from queueing.store.keys import PodRef
from quota.lifecycle import State
from quota.resources import ResourceVector
from quota.values import value
from quota.workload import Admission, PodSetAdmission


class PodPhase(enum.StrEnum):
    PLACED = "Placed"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    STOPPED = "Stopped"
    LOST = "Lost"


LIVE_PHASES: Final = frozenset({PodPhase.PLACED, PodPhase.RUNNING})


class NodeState(enum.StrEnum):
    READY = "Ready"
    LOST = "Lost"


class Outcome(enum.StrEnum):
    """How a finished workload ended."""

    NONE = ""
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"
    REJECTED = "Rejected"


# -- admission codec -----------------------------------------------------------------

def admission_to_json(admission: Admission) -> str:
    return compact.dumps({
        "clusterQueue": admission.cluster_queue,
        "borrowing": admission.borrowing,
        "cluster": admission.cluster,
        "podSets": [{"name": ps.name, "count": ps.count, "flavors": dict(ps.flavors),
                     "usage": dict(ps.usage), "topologyLevels": list(ps.topology_levels),
                     "topology": [[list(values), count] for values, count in ps.topology],
                     "nodes": [[node, count] for node, count in ps.nodes]}
                    for ps in admission.pod_sets],
    }, sort_keys=True)


def admission_from_json(text: str) -> Admission:
    doc = json.loads(text)
    pod_sets = tuple(
        PodSetAdmission(name=ps["name"], count=int(ps["count"]),
                        flavors={str(k): str(v) for k, v in ps["flavors"].items()},
                        usage={str(k): int(v) for k, v in ps["usage"].items()},
                        topology_levels=tuple(ps.get("topologyLevels", ())),
                        topology=tuple((tuple(values), int(count))
                                       for values, count in ps.get("topology", [])),
                        nodes=tuple((str(node), int(count))
                                    for node, count in ps.get("nodes", [])))
        for ps in doc["podSets"])
    return Admission(doc["clusterQueue"], pod_sets, borrowing=bool(doc.get("borrowing")),
                     cluster=doc.get("cluster"))


def vector_to_json(vector: Mapping[str, int]) -> str:
    return compact.dumps(dict(vector), sort_keys=True)


def vector_from_json(text: str) -> ResourceVector:
    return {str(k): int(v) for k, v in json.loads(text or "{}").items()}


def _float(h: Mapping[str, str], name: str) -> float | None:
    value = h.get(name)
    return float(value) if value not in (None, "") else None


def _int(h: Mapping[str, str], name: str, default: int = 0) -> int:
    value = h.get(name)
    return int(value) if value not in (None, "") else default


def _canonical_int(h: Mapping[str, str], name: str) -> int:
    """A field the scripts compare as text (``attempt``): it must be written exactly as
    kuota writes it, or every compare-and-set on the record would fail forever."""
    value = int(h[name])
    if str(value) != h[name]:
        raise ValueError(f"{name} {h[name]!r} is not written as kuota writes it")
    return value


#: The enums by value: a dict lookup is several times cheaper than calling the enum.
_STATES: Final[Mapping[str, State]] = {s.value: s for s in State}
_OUTCOMES: Final[Mapping[str, Outcome]] = {o.value: o for o in Outcome}


def _names(text: str) -> tuple[str, ...]:
    """A JSON list of strings (a placement) as a tuple, exactly as ``json.loads`` reads it.

    kuota writes placements compactly (``["n1","n2"]``): such a short text without escapes
    or control characters is split directly, several times cheaper than the JSON parser;
    anything else, and long lists (where the parser is faster), goes to the parser.
    """
    if len(text) <= _SPLIT_MAX and text[:2] == '["' and text[-2:] == '"]' \
            and "\\" not in text and text.isprintable():
        names = text[2:-2].split('","')
        if text.count('"') == 2 * len(names):  # no quote inside a name: the split was exact
            return tuple(names)
    return tuple(json.loads(text))


#: Longest placement text split directly (beyond it the JSON parser is faster).
_SPLIT_MAX: Final = 256


# -- records -------------------------------------------------------------------------

@value
class WorkloadRecord:
    key: str
    state: State
    spec_json: str = ""
    queue: str = ""
    priority: int = 0
    created: float = 0.0
    #: The FIFO key: submission time, or the last eviction.
    queued_at: float = 0.0
    attempt: int = 0
    outcome: Outcome = Outcome.NONE
    reason: str = ""
    message: str = ""
    cluster_queue: str = ""
    admission: Admission | None = None
    admitted_at: float | None = None
    #: Node of every pod of the current attempt; empty until placed.
    placement: tuple[str, ...] = ()
    pods: int = 0
    pods_done: int = 0
    failures: int = 0
    backoff_limit: int = 0
    finished_at: float | None = None
    submission: str = ""
    #: The latest multi-cluster dispatch decision (``Decision.to_dict`` as JSON), if any.
    dispatch_json: str = ""
    #: The manager that dispatched this workload here (multi-cluster dispatch), or "".
    origin: str = ""
    #: While Evicting: what follows once its pods are gone — ``requeue``, ``deactivate`` or
    #: ``finish`` (a cancel, or a failure past its retries).
    after: str = ""
    #: Digests of the manifest as submitted (:mod:`queueing.store.digests`); "" when the
    #: record was written without them.
    shape: str = ""
    spec_sum: str = ""

    #: Why the stored hash could not be read ("" when it could): a record written around
    #: kuota. Such a record carries only its key and state (Pending when the state itself is
    #: unreadable), so the scheduler quarantines it instead of failing on it.
    corrupt: str = ""

    @classmethod
    def from_hash(cls, key: str, h: Mapping[str, str]) -> WorkloadRecord:
        """The record; never raises — an unreadable hash gives a :attr:`corrupt` record."""
        try:
            return cls._parse(key, h)
        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError,
                RecursionError) as exc:
            try:
                state = State(h.get("state") or State.PENDING)
            except ValueError:
                state = State.PENDING
            return cls(key=key, state=state, reason=str(h.get("reason", "")),
                       message=str(h.get("message", "")),
                       corrupt=f"unreadable workload record: {type(exc).__name__}: "
                               f"{str(exc)[:200]}")

    @classmethod
    def _parse(cls, key: str, h: Mapping[str, str]) -> WorkloadRecord:
        # The scheduler parses every record it re-reads, so this is written for speed (it
        # was a twentieth of the scheduler's CPU): enums by dict lookup (the constructor
        # only to raise the same error on an unknown value), numbers inline ("" or missing
        # reads as the empty value, as _int and _float), positional arguments. The fields
        # are read in the order of the dataclass, so the first bad one names the error.
        get = h.get
        # Every writer sets the state: a record without one was written around kuota.
        text = h["state"]
        state = _STATES.get(text) or State(text)
        spec_json = get("spec", "")
        queue = get("queue", "")
        value: str | None = get("priority")
        priority = int(value) if value else 0
        value = get("created")
        created = (float(value) or 0.0) if value else 0.0
        value = get("queued_at")
        queued_at = (float(value) or 0.0) if value else 0.0
        attempt = _canonical_int(h, "attempt")
        text = get("outcome") or ""
        outcome = _OUTCOMES[text] if text in _OUTCOMES else Outcome(text)
        reason = get("reason", "")
        message = get("message", "")
        cluster_queue = get("cq", "")
        value = get("admission")
        admission = admission_from_json(value) if value else None
        value = get("admitted_at")
        admitted_at = float(value) if value else None
        value = get("placement")
        placement = _names(value) if value else ()
        value = get("pods")
        pods = int(value) if value else 0
        value = get("pods_done")
        pods_done = int(value) if value else 0
        value = get("failures")
        failures = int(value) if value else 0
        value = get("backoff_limit")
        backoff_limit = int(value) if value else 0
        value = get("finished_at")
        finished_at = float(value) if value else None
        return cls(key, state, spec_json, queue, priority, created, queued_at, attempt,
                   outcome, reason, message, cluster_queue, admission, admitted_at, placement,
                   pods, pods_done, failures, backoff_limit, finished_at,
                   get("submission", ""), get("dispatch", ""), get("origin", ""),
                   get("after", ""), get("shape", ""), get("spec_sum", ""))

    def spec(self) -> dict[str, Any]:
        """The Workload manifest as submitted."""
        doc = json.loads(self.spec_json) if self.spec_json else {}
        if not isinstance(doc, dict):
            raise ValueError(f"workload {self.key}: stored spec is not an object")
        return doc

    def dispatch(self) -> dict[str, Any] | None:
        """The latest dispatch decision as stored, or None when there is none."""
        if not self.dispatch_json:
            return None
        doc = json.loads(self.dispatch_json)
        if not isinstance(doc, dict):
            raise ValueError(f"workload {self.key}: stored dispatch decision is not an object")
        return doc

    @property
    def dispatched(self) -> bool:
        """Sent here by a manager: admitted there, placed and run here without a queue."""
        return bool(self.origin)

    def pod_refs(self) -> list[PodRef]:
        """The pods of the current attempt (empty before the first admission)."""
        if self.attempt == 0:
            return []
        return [PodRef(self.key, self.attempt, i) for i in range(self.pods)]


@dataclass(frozen=True, slots=True)
class PodRecord:
    ref: PodRef
    state: PodPhase
    node: str = ""
    epoch: int = 0
    pod_set: str = ""
    requests: ResourceVector = field(default_factory=dict)
    stop: bool = False
    exit_code: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    devices: str = ""
    #: Why the stored hash could not be read (written around kuota): the record then reads
    #: as a Lost pod that holds nothing, and says so.
    corrupt: str = ""

    @classmethod
    def from_hash(cls, ref: PodRef, h: Mapping[str, str]) -> PodRecord:
        """The record; never raises — an unreadable hash gives a :attr:`corrupt` record."""
        try:
            return cls._parse(ref, h)
        except (ValueError, TypeError, AttributeError, ArithmeticError, RecursionError) as exc:
            return cls(ref=ref, state=PodPhase.LOST, node=str(h.get("node", "")),
                       corrupt=f"unreadable pod record: {type(exc).__name__}: "
                               f"{str(exc)[:200]}")

    @classmethod
    def _parse(cls, ref: PodRef, h: Mapping[str, str]) -> PodRecord:
        code = h.get("exit_code")
        return cls(ref=ref, state=PodPhase(h.get("state") or PodPhase.PLACED),
                   node=h.get("node", ""), epoch=_int(h, "epoch"), pod_set=h.get("pod_set", ""),
                   requests=vector_from_json(h.get("requests", "")), stop=h.get("stop") == "1",
                   exit_code=int(code) if code not in (None, "") else None,
                   started_at=_float(h, "started_at"), finished_at=_float(h, "finished_at"),
                   devices=h.get("devices", ""))

    @property
    def live(self) -> bool:
        return self.state in LIVE_PHASES

    @property
    def died_with_node(self) -> bool:
        """On a node that is gone: did this pod die with it? Live or Lost, or Stopped though
        nobody asked (a worker shutting down stops its pods itself before leaving)."""
        return self.state in (*LIVE_PHASES, PodPhase.LOST) or (
            self.state is PodPhase.STOPPED and not self.stop)


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    pool: str
    state: NodeState
    capacity: ResourceVector = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[str, ...] = ()
    epoch: int = 0
    heartbeat: float = 0.0
    reason: str = ""
    #: Set by ``kuota node cordon|drain``: no new pods are placed here.
    cordoned: bool = False
    #: Set by ``kuota node drain``: the scheduler requeues the workloads running here.
    draining: bool = False
    #: Seconds a process of this node's worker may run on once the store no longer lists
    #: its pod: the worker's stop check plus its grace (0 from a worker that does not say).
    stops_within: float = 0.0
    #: When the node was declared Lost (0: not Lost, or not said).
    lost_at: float = 0.0

    @classmethod
    def from_hash(cls, name: str, h: Mapping[str, str]) -> NodeRecord:
        """The record; never raises — an unreadable hash (written around kuota) reads as a
        Lost node of no pool, which nothing is placed on."""
        try:
            return cls._parse(name, h)
        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError,
                RecursionError) as exc:
            return cls(name=name, pool="", state=NodeState.LOST,
                       reason=f"unreadable node record: {type(exc).__name__}: {str(exc)[:200]}")

    @classmethod
    def _parse(cls, name: str, h: Mapping[str, str]) -> NodeRecord:
        capacity = vector_from_json(h.get("capacity", ""))
        for resource, amount in capacity.items():
            if not resource or amount < 0:
                raise ValueError(f"capacity {resource!r}: {amount} is not a resource with an "
                                 "amount >= 0")
        stops_within = _float(h, "stops_within") or 0.0
        if not 0 <= stops_within < math.inf:
            raise ValueError(f"stops_within {stops_within} is not a number of seconds >= 0")
        return cls(name=name, pool=h.get("pool", ""),
                   state=NodeState(h.get("state") or NodeState.LOST),
                   capacity=capacity,
                   labels={str(k): str(v) for k, v in json.loads(h.get("labels") or "{}").items()},
                   devices=tuple(json.loads(h.get("devices") or "[]")),
                   epoch=_int(h, "epoch"), heartbeat=_float(h, "heartbeat") or 0.0,
                   reason=h.get("reason", ""), cordoned=h.get("cordoned") == "1",
                   draining=h.get("draining") == "1", stops_within=stops_within,
                   lost_at=_float(h, "lost_at") or 0.0)

    @property
    def ready(self) -> bool:
        return self.state is NodeState.READY

    @property
    def schedulable(self) -> bool:
        """Ready and not cordoned: new pods may be placed here."""
        return self.ready and not self.cordoned
