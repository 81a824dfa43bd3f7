"""Queue objects and cluster facts, from watch events into the engine that leads.

Queue objects (ResourceFlavor, ClusterQueue, Cohort, LocalQueue, AdmissionCheck)
go to ``engine.apply`` / ``engine.delete``, each checked with the API models
first: a malformed one is *not* applied and its problem is kept (a
ClusterQueue with a bad spec shows ``Active=False`` with that message) while
every other object keeps working — and one that was applied before is taken
back, as a ClusterQueue a user broke must not go on admitting under its old
spec. Echoes of our own status writes change no spec and are skipped: the
spec last applied is kept for each object.

WorkloadPriorityClasses give priorities by name (a Job naming one that does not
exist waits for it: :mod:`kuota.operator.priorities`); Namespaces their labels (for
``namespaceSelector``). Nodes and Topologies go to ``engine.topology`` for
topology-aware flavors; a malformed one is logged and skipped, and what was
known of it is kept (a Node heartbeat that changes nothing admission reads is
skipped too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from admission.engine import Engine
from kuota.operator import names, topology
from kuota.operator.objects import key_of
from quota import api, convert

log = logging.getLogger(__name__)
Body = dict[str, Any]
CONFIG_KINDS = tuple(r.kind for r in names.CONFIG_RESOURCES)
#: Every kind :meth:`Configs.ingest` takes.
KINDS = (*CONFIG_KINDS, "WorkloadPriorityClass", "Namespace", "Node", "Topology")


def problem_text(exc: api.ObjectError) -> str:
    return "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in exc.problems)


class Configs:
    """What the engine knows of queue objects, priority classes, namespaces, nodes and
    topologies, kept in step with their watch events."""

    def __init__(self, problems: dict[str, str], changed: Callable[[], None]) -> None:
        #: ``Kind/key`` -> why the object is not used (shared with the controller).
        self.problems = problems
        self._changed = changed
        self.engine: Engine | None = None
        self.priority_classes: dict[str, int] = {}
        #: Kubernetes PriorityClasses read so far (their value never changes).
        self.pod_priority_classes: dict[str, int] = {}
        #: WorkloadPriorityClass name -> what to do once it exists (Workloads not created
        #: while the class their owner names is missing; :mod:`kuota.operator.priorities`).
        self._waiting: dict[str, dict[str, Callable[[], None]]] = {}
        #: ``Kind/key`` -> the spec last applied to the engine.
        self._applied: dict[str, Any] = {}
        #: Node name -> the node last handed to the engine (skip unchanged heartbeats).
        self._nodes: dict[str, Any] = {}

    def lead(self, engine: Engine | None) -> None:
        """Feed ``engine`` from now on (None: stop); a new engine knows nothing yet."""
        self.engine = engine
        self._applied.clear()
        self._nodes.clear()

    def ingest(self, kind: str, body: Body, deleted: bool) -> None:
        if kind in CONFIG_KINDS:
            self._config(kind, body, deleted)
        elif kind == "WorkloadPriorityClass":
            self._priority_class(body, deleted)
        elif kind == "Namespace":
            self._namespace(body, deleted)
        elif kind == "Node":
            self._node(body, deleted)
        elif kind == "Topology":
            self._topology(body, deleted)
        else:
            raise ValueError(f"{kind} is not a kind of configuration")

    def _config(self, kind: str, body: Body, deleted: bool) -> None:
        assert self.engine is not None
        key = key_of(body)
        ref = f"{kind}/{key}"
        if deleted:
            self.problems.pop(ref, None)
            if self._applied.pop(ref, None) is not None:
                self.engine.delete(kind, key)
            self._changed()
            return
        spec = body.get("spec")
        if ref in self._applied and self._applied[ref] == spec:
            return  # a status write, or a label: nothing the engine reads
        try:
            obj = api.parse_object(body, source="")
        except api.ObjectError as exc:
            self.problems[ref] = problem_text(exc)
            log.warning("%s %s is invalid and not used: %s", kind, key, self.problems[ref])
            if self._applied.pop(ref, None) is not None:
                self.engine.delete(kind, key)
            self._changed()
            return
        self.problems.pop(ref, None)
        self.engine.apply(convert.config(obj))
        self._applied[ref] = spec
        self._changed()

    def _priority_class(self, body: Body, deleted: bool) -> None:
        name = key_of(body)
        if deleted:
            self.priority_classes.pop(name, None)
            return
        value = body.get("value")
        if isinstance(value, int) and not isinstance(value, bool):
            self.priority_classes[name] = value
            for again in self._waiting.pop(name, {}).values():
                again()

    def wait_for_class(self, name: str, work: str, again: Callable[[], None]) -> None:
        """Call ``again`` (once per ``work``) when WorkloadPriorityClass ``name`` appears."""
        self._waiting.setdefault(name, {})[work] = again

    def _namespace(self, body: Body, deleted: bool) -> None:
        assert self.engine is not None
        if deleted:
            return
        name = key_of(body)
        labels = dict((body.get("metadata") or {}).get("labels") or {})
        if self.engine.cache.namespaces.get(name, {}) != {
                **labels, "kubernetes.io/metadata.name": name}:
            self.engine.set_namespace(name, labels)
            self._changed()

    def _node(self, body: Body, deleted: bool) -> None:
        """A Node's capacity and labels for topology-aware admission. A malformed one is
        logged and skipped: the engine keeps what it knew of that node."""
        assert self.engine is not None
        name = key_of(body)
        if deleted:
            if self._nodes.pop(name, None) is not None:
                self.engine.topology.delete_node(name)
                self._changed()
            return
        try:
            node = topology.node_from_body(body)
        except topology.NodeError as exc:
            self.problems[f"Node/{name}"] = str(exc)
            log.warning("Node %s is not used for topology (previous state kept): %s", name, exc)
            return
        self.problems.pop(f"Node/{name}", None)
        if self._nodes.get(name) == node:
            return  # a heartbeat or a status change admission does not read
        self._nodes[name] = node
        self.engine.topology.set_node(node)
        self._changed()

    def _topology(self, body: Body, deleted: bool) -> None:
        """A Topology's levels. A malformed one is logged and skipped (the previous kept)."""
        assert self.engine is not None
        name = key_of(body)
        ref = f"Topology/{name}"
        if deleted:
            self.problems.pop(ref, None)
            self._applied.pop(ref, None)
            self.engine.topology.delete_topology(name)
            self._changed()
            return
        spec = body.get("spec")
        if self._applied.get(ref) == spec:
            return
        try:
            levels = topology.topology_from_body(body)
        except api.ObjectError as exc:
            self.problems[ref] = problem_text(exc)
            log.warning("Topology %s is invalid and not used (previous state kept): %s", name,
                        self.problems[ref])
            return
        self.problems.pop(ref, None)
        self.engine.topology.set_topology(levels)
        self._applied[ref] = spec
        self._changed()
