"""Every Redis key of the store, built in one place under one prefix.

rq's key strings drifted over the years because each module spelled its own;
here every key kuota writes is a method of :class:`Keys`, and Lua scripts get
them only through ``KEYS[]``. Shapes (``P`` is the prefix)::

    P:objects:<Kind>                 hash   name -> manifest JSON (queue objects)
    P:namespaces                     hash   name -> labels JSON
    P:config:generation              string bumped by every apply/delete
    P:workloads                      zset   workload key -> submission time
    P:workloads-unfinished           zset   the same, for those not Finished (see below)
    P:workloads-finished             zset   workload key -> when it finished
    P:workload:<ns>/<name>           hash   one workload's spec, state, admission
    P:workload:<ns>/<name>:history   list   JSON lines: what happened when
    P:pod:<ns>/<name>:<attempt>:<i>  hash   one pod of one attempt of a gang
    P:log:<ns>/<name>:<attempt>:<i>  list   the pod's output, in chunks
    P:nodes                          set    node names
    P:node:<name>                    hash   pool, capacity, labels, heartbeat, state
    P:node:<name>:pods               set    ids of the pods holding the node's capacity
    P:events                         stream what the scheduler must look at
    P:scheduler:lease                string holder|token, with a TTL
    P:scheduler:fence                string the last fencing token handed out
    P:schedulers                     hash   scheduler identity -> presence JSON (status)
    P:quarantine                     hash   a malformed record's name -> why it was set aside
    P:quarantined:<key>              any    a key of the wrong type, moved out of the way

rq keeps its own keys under ``rq:``; the store chooses only the *names* of
the per-node rq queues (``P:node:<name>``, so rq's key is ``rq:queue:P:node:<name>``)
and the rq job ids, which rq restricts to ``[A-Za-z0-9_-]`` — a digest of the
prefix and the ids of the pods a job starts.

Workload keys are ``namespace/name`` (DNS labels and subdomains, so never a
``:``); node names are checked by :func:`check_node_name` for the same reason.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from quota.values import value

_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.{}-]*$")
#: DNS-subdomain-like, as Kubernetes node names.
_NODE = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")

DEFAULT_PREFIX: Final = "kuota"


class BadKey(ValueError):
    """A prefix, node name or pod id that cannot be part of a key."""


def check_node_name(name: str) -> str:
    if not _NODE.match(name):
        raise BadKey(f"node name {name!r} is invalid: use lower-case letters, digits, '-' and "
                        "'.', starting and ending with a letter or digit")
    return name


@value
class PodRef:
    """One pod of one attempt of a workload; ``id`` is how sets and events name it."""

    workload: str
    attempt: int
    index: int

    @property
    def id(self) -> str:
        return f"{self.workload}:{self.attempt}:{self.index}"

    @classmethod
    def parse(cls, pod_id: str) -> PodRef:
        workload, sep1, rest = pod_id.partition(":")
        attempt, sep2, index = rest.partition(":")
        if not (sep1 and sep2 and "/" in workload and attempt.isdigit() and index.isdigit()):
            raise BadKey(f"{pod_id!r} is not a pod id (namespace/name:attempt:index)")
        return cls(workload, int(attempt), int(index))

    @classmethod
    def parse_or_none(cls, pod_id: str) -> PodRef | None:
        """:meth:`parse`, or None for what is not a pod id (a record written around kuota)."""
        try:
            return cls.parse(pod_id)
        except ValueError:  # BadKey, or digits int() does not read ("²")
            return None


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not _PREFIX.match(self.prefix):
            raise BadKey(f"key prefix {self.prefix!r} is invalid: use letters, digits and "
                            "'_', '.', '-', '{', '}', starting with a letter or digit")

    # -- queue objects ---------------------------------------------------------
    def objects(self, kind: str) -> str:
        return f"{self.prefix}:objects:{kind}"

    @property
    def namespaces(self) -> str:
        return f"{self.prefix}:namespaces"

    @property
    def config_generation(self) -> str:
        return f"{self.prefix}:config:generation"

    # -- workloads and pods ----------------------------------------------------
    @property
    def workloads(self) -> str:
        return f"{self.prefix}:workloads"

    def workload(self, key: str) -> str:
        return f"{self.prefix}:workload:{key}"

    def workloads_in(self, namespace: str) -> str:
        """The keys of a namespace's submitted workloads (a zset by submission time): what a
        submitter limited to that namespace lists instead of :attr:`workloads`."""
        return f"{self.prefix}:workloads:{namespace}"

    @property
    def unfinished(self) -> str:
        """The keys of the workloads not Finished (a zset by submission time), so that
        what reads only those (a scheduler's rebuild, the dashboard, ``kuota status``)
        costs the same however many finished ones the store retains. Every script that
        stores a workload adds it, every one that finishes, purges or removes one takes it
        out. A key may outlive its workload's finish (one finished by an older kuota):
        readers check the state they read."""
        return f"{self.prefix}:workloads-unfinished"

    @property
    def finished(self) -> str:
        """The keys of the finished workloads by when they finished (a zset): retention
        forgets the oldest first, however many a pool keeps. Kept by the same scripts as
        :attr:`unfinished`; a key may be missing (finished by an older kuota: the
        scheduler's resync puts it back) or out of date (the forgetting script checks)."""
        return f"{self.prefix}:workloads-finished"

    @property
    def unfinished_marker(self) -> str:
        """Set once :attr:`unfinished` holds every unfinished workload and :attr:`finished`
        every finished one (an older store's are added by the first scheduler that finds
        it unset); until then readers read :attr:`workloads`."""
        return f"{self.prefix}:workloads-unfinished-complete"

    @property
    def namespace_index_marker(self) -> str:
        """Set once every stored workload is in its namespace's index (an older store's
        records are added by the first scheduler that finds it unset)."""
        return f"{self.prefix}:workloads-by-namespace"

    # -- requests of namespace-scoped submitters ---------------------------------
    def requests(self, namespace: str) -> str:
        """The stream a namespace's submitters write submit and cancel requests to."""
        return f"{self.prefix}:requests:{namespace}"

    def answer(self, namespace: str, request: str) -> str:
        """The scheduler's answer to one request (JSON), kept an hour."""
        return f"{self.prefix}:answer:{namespace}:{request}"

    def answers(self, namespace: str) -> str:
        """The request ids a namespace's answers are kept under, by when (a zset): what
        bounds how many it keeps (:data:`queueing.store.requests.ANSWERS_KEPT`)."""
        return f"{self.prefix}:answers:{namespace}"

    def purged(self, namespace: str) -> str:
        """Submission ids of a namespace's workloads forgotten by retention (a zset by when):
        what tells a purged submission from one Redis lost (:mod:`kuota.service.journal`)."""
        return f"{self.prefix}:purged:{namespace}"

    def history(self, key: str) -> str:
        return f"{self.prefix}:workload:{key}:history"

    def pod(self, pod: PodRef) -> str:
        return f"{self.prefix}:pod:{pod.id}"

    def log(self, pod: PodRef) -> str:
        return f"{self.prefix}:log:{pod.id}"

    def dispatched(self, origin: str) -> str:
        """The keys of the workloads a manager (``origin``) dispatched here."""
        return f"{self.prefix}:dispatched:{origin}"

    # -- nodes -----------------------------------------------------------------
    @property
    def nodes(self) -> str:
        return f"{self.prefix}:nodes"

    def node(self, name: str) -> str:
        return f"{self.prefix}:node:{name}"

    def node_pods(self, name: str) -> str:
        return f"{self.prefix}:node:{name}:pods"

    def node_queue(self, name: str) -> str:
        """The rq queue *name* (not a key) a node's worker consumes."""
        return f"{self.prefix}:node:{name}"

    def start_job_id(self, pods: Sequence[PodRef]) -> str:
        """A deterministic rq job id for starting ``pods``: the same pods, the same job."""
        names = "|".join(sorted(p.id for p in pods))
        digest = hashlib.sha1(f"{self.prefix}|{names}".encode()).hexdigest()
        return f"kuota-{digest}"

    # -- scheduler -------------------------------------------------------------
    @property
    def events(self) -> str:
        return f"{self.prefix}:events"

    @property
    def lease(self) -> str:
        return f"{self.prefix}:scheduler:lease"

    @property
    def fence(self) -> str:
        return f"{self.prefix}:scheduler:fence"

    @property
    def schedulers(self) -> str:
        return f"{self.prefix}:schedulers"

    # -- malformed records (module quarantine) ------------------------------------
    @property
    def quarantine(self) -> str:
        """What was set aside as malformed: the record's name (a key, or ``key field``
        for one field or member of it) -> why."""
        return f"{self.prefix}:quarantine"

    def quarantined(self, key: str) -> str:
        """Where a key of the wrong type is moved, so that the store can go on without it."""
        return f"{self.prefix}:quarantined:{key}"

    def pattern(self) -> str:
        """SCAN pattern for every key of this prefix (tests and ``reset``)."""
        return f"{self.prefix}:*"
