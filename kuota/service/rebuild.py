"""Rebuild an :class:`~admission.engine.Engine` from what Redis holds.

A scheduler that becomes active starts from nothing but Redis: queue objects
and namespace labels first, then every workload that has not finished.
Workloads holding quota are *restored* — their usage counted in the cache
exactly as admitted — before any cycle runs, so a new leader can never admit
past a quota its predecessor already filled. Pending workloads are queued by
their stored queue-order timestamp, so the order survives a failover.
Workloads dispatched here by a manager are listed apart (``Loaded.dispatched``):
they bypass the engine (:mod:`kuota.service.dispatched`). A workload whose
record or spec cannot be read, or fails the submission checks, is listed in
``Loaded.invalid`` and left out; one the engine fails on while restoring it
raises :class:`~admission.errors.WorkloadFailed` naming it (the scheduler
quarantines it and rebuilds).

The same rebuild serves read-only views (``kuota get clusterqueues``,
``kuota pending``): they show the real engine's numbers, not a re-implementation.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from admission.engine import ConfigObject, Engine, Record
from admission.errors import blame
from kuota.service import runnable
from kuota.service.submission import parse_workload
from queueing.store import Store, WorkloadRecord, digests
from queueing.store.objects import KINDS
from quota import api, convert, lifecycle
from quota.api.names import dns_label_error, dns_subdomain_error
from quota.config import EngineConfig
from quota.lifecycle import State
from quota.workload import Admission, WorkloadInfo

log = logging.getLogger(__name__)

#: States the scheduler leaves alone: done, or set aside as unschedulable.
SET_ASIDE: Final = frozenset({State.FINISHED, State.INVALID})


class ParsedObjects:
    """Stored queue objects parsed once per stored text: a leader reading them again for a
    config change (:mod:`kuota.service.reconfig`) parses only the ones whose text changed
    — 2,000 objects took 75–105 ms to parse every time."""

    def __init__(self) -> None:
        #: ``(kind, name)`` -> (the stored text, what it parsed to or the problem).
        self._seen: dict[tuple[str, str], tuple[str, object]] = {}

    def parse(self, kind: str, name: str, text: str) -> object:
        """The API object ``text`` holds (a config converted for the engine), or an
        :class:`api.ObjectError`'s message."""
        seen = self._seen.get((kind, name))
        if seen is not None and seen[0] == text:
            return seen[1]
        obj = _parse_text(kind, name, text)
        self._seen[(kind, name)] = (text, obj)
        return obj

    def keep_only(self, seen: set[tuple[str, str]]) -> None:
        """Forget the objects no longer stored."""
        for gone in self._seen.keys() - seen:
            del self._seen[gone]


def _parse_text(kind: str, name: str, text: str) -> object:
    """A stored manifest's text as the API object, or what is wrong with it (a manifest
    written around kuota: truncated, not an object, failing the API's checks)."""
    try:
        manifest = json.loads(text)
    except RecursionError:
        return f"{kind} {name}: stored manifest is nested too deeply"
    except ValueError as exc:
        return f"{kind} {name}: stored manifest is not JSON: {exc}"
    if not isinstance(manifest, dict):
        return f"{kind} {name}: stored manifest is a JSON {type(manifest).__name__}, not an " \
               "object"
    return _parse_manifest(manifest)


def _parse_manifest(manifest: dict[str, Any]) -> object:
    """A stored manifest as the API object (a config converted for the engine), or what is
    wrong with it."""
    try:
        obj: object = api.parse_object(manifest, source="redis")
    except api.ObjectError as exc:
        return str(exc)
    if not isinstance(obj, api.WorkloadPriorityClass | api.Topology
                      | api.MultiClusterConfig | api.MemberCluster):
        obj = convert.config(obj)
    return obj


@dataclass
class Configs:
    objects: list[ConfigObject] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: ``Kind/name`` -> why a stored object could not be read (skipped).
    problems: dict[str, str] = field(default_factory=dict)
    #: Objects that are not engine configs: Topologies (for topology-aware flavors),
    #: MultiClusterConfigs and MemberClusters (pool members for multi-cluster dispatch).
    topologies: list[api.Topology] = field(default_factory=list)
    multicluster_configs: list[api.MultiClusterConfig] = field(default_factory=list)
    members: list[api.MemberCluster] = field(default_factory=list)
    #: What each stored text parsed to: read again with it, only changed texts are parsed.
    parsed: ParsedObjects = field(default_factory=ParsedObjects, compare=False, repr=False)


@dataclass
class Loaded:
    engine: Engine
    configs: Configs
    #: Workloads not finished, as read.
    workloads: dict[str, WorkloadRecord]
    #: Workloads whose stored spec cannot be read -> the problem.
    invalid: dict[str, str]
    #: Workloads dispatched here by a manager (not in the engine: no queue, no quota).
    dispatched: dict[str, WorkloadRecord] = field(default_factory=dict)

    def put(self, record: WorkloadRecord, specs: SpecCache) -> None:
        """Take in one stored workload as read (one not in the engine yet); the engine's
        events are left in its outbox."""
        if record.state in SET_ASIDE:  # finished meanwhile
            return
        if record.dispatched:
            self.dispatched[record.key] = record
            return
        self.workloads[record.key] = record
        checked = checked_info(record, specs)
        if isinstance(checked, str):
            self.invalid[record.key] = checked
            return
        with blame(record.key):
            add(self.engine, record, checked)

    def drop(self, key: str, now: float) -> None:
        """Forget a workload, as if it had never been read: its quota released, out of
        its queue (its stored record changed: :meth:`put` takes in the new one)."""
        self.workloads.pop(key, None)
        self.invalid.pop(key, None)
        self.dispatched.pop(key, None)
        record = self.engine.records.get(key)
        if record is not None and record.state is not State.FINISHED:
            self.engine.finish(key, now)
        self.engine.records.pop(key, None)


def load_configs(store: Store, parsed: ParsedObjects | None = None) -> Configs:
    """Queue objects as core configs, in dependency order (flavors first); with
    ``parsed`` (a previous read's), only the objects whose stored text changed are
    parsed again."""
    unreadable: dict[str, str] = {}
    configs = Configs(namespaces=store.objects.namespaces(unreadable),
                      parsed=parsed or ParsedObjects())
    for what, why in unreadable.items():  # (labels that are not JSON: the namespace has none)
        configs.problems[f"Namespace/{what[len(store.keys.namespaces) + 1:]}"] = why
        log.warning("skipping the stored labels of namespace %s", why)
    seen: set[tuple[str, str]] = set()
    for kind in KINDS:
        for name, text in store.objects.texts(kind).items():
            seen.add((kind, name))
            obj = configs.parsed.parse(kind, name, text)
            if isinstance(obj, str):
                configs.problems[f"{kind}/{name}"] = obj
                log.warning("skipping stored %s %s: %s", kind, name, obj)
                continue
            if isinstance(obj, api.WorkloadPriorityClass):
                configs.priority_classes[obj.metadata.name] = obj.value
            elif isinstance(obj, api.Topology):
                configs.topologies.append(obj)
            elif isinstance(obj, api.MultiClusterConfig):
                configs.multicluster_configs.append(obj)
            elif isinstance(obj, api.MemberCluster):
                configs.members.append(obj)
            else:
                configs.objects.append(obj)  # type: ignore[arg-type]
    configs.parsed.keep_only(seen)
    return configs


class SpecCache:
    """Workloads already checked, by their manifest's shape (:mod:`queueing.store.digests`).

    Checking a stored manifest again (the models, every rule) is most of what a rebuild
    costs, and the workloads of one job array or one benchmark class differ only in
    their names: a manifest of a shape checked before is that object with the name
    replaced, the name checked on its own (the only rule that reads it). A record whose
    manifest text still has the digest it was submitted with is not even parsed: its
    stored shape names the checked object. A rebuild keeps every shape it meets; a leader
    keeps the ``limit`` it met last (new submissions of a job array or a sweep share a
    few shapes)."""

    def __init__(self, limit: int | None = None) -> None:
        self._checked: OrderedDict[str, _Shape] = OrderedDict()
        self._limit = limit

    def parse(self, spec: dict[str, Any], source: str,
              check: Callable[[api.Workload], None] | None = None) -> api.Workload:
        """The checked object; ``check`` — a further check that does not read the name,
        raising when it fails — runs once per shape too (a failing shape is not kept)."""
        meta = spec.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) \
                or not isinstance(namespace, str) or dns_label_error(namespace) is not None:
            # (an empty or missing namespace is defaulted by the full check: not cached)
            obj = parse_workload(spec, source=source)
            if check is not None:
                check(obj)
            return obj
        name: str = meta["name"]
        # Neither the name nor the namespace is part of the shape: a sweep over many
        # namespaces (one per team) shares one check.
        shape = digests.shape(spec)
        known = self._get(shape)
        if known is None:
            checked = parse_workload(spec, source=source)
            if check is not None:
                check(checked)
            self._put(shape, _Shape(checked))
            return checked
        _check_name(name, source)
        return known.obj.model_copy(update={"metadata": known.obj.metadata.model_copy(
            update={"name": name, "namespace": namespace})})

    def info(self, record: WorkloadRecord) -> WorkloadInfo | None:
        """The core's view of a record whose manifest is of a shape checked before and
        unchanged since its submission, without parsing it; None otherwise."""
        if not record.shape or not record.spec_sum:
            return None
        known = self._get(record.shape)
        namespace, _, name = record.key.partition("/")
        if known is None or dns_label_error(namespace) is not None \
                or digests.digest(record.spec_json) != record.spec_sum:
            return None
        _check_name(name, f"workload {record.key}")
        # The source is the shape's checked object, shared: its name may be another's.
        return known.info(namespace, name, record.priority, record.queued_at)

    def _get(self, shape: str) -> _Shape | None:
        known = self._checked.get(shape)
        if known is not None and self._limit is not None:
            self._checked.move_to_end(shape)
        return known

    def _put(self, shape: str, known: _Shape) -> None:
        self._checked[shape] = known
        if self._limit is not None and len(self._checked) > self._limit:
            self._checked.popitem(last=False)


class _Shape:
    """One checked manifest shape: the object, and its pod sets as the core sees them
    (made at the first workload that needs them, then shared by all)."""

    __slots__ = ("_view", "obj")

    def __init__(self, obj: api.Workload) -> None:
        self.obj = obj
        self._view: WorkloadInfo | None = None

    def info(self, namespace: str, name: str, priority: int, created: float) -> WorkloadInfo:
        if self._view is None:
            self._view = convert.workload(self.obj, priority=priority, created=created)
        view = self._view
        return WorkloadInfo(namespace=namespace, name=name, queue_name=view.queue_name,
                            pod_sets=view.pod_sets, priority=priority, created=created,
                            priority_class=view.priority_class,
                            max_execution=view.max_execution,
                            preemption_gated=view.preemption_gated, source=self.obj)


def _check_name(name: str, source: str) -> None:
    error = dns_subdomain_error(name)
    if error is not None:
        raise api.ObjectError([api.Problem(source, "Workload", name, "metadata.name", error)])


def workload_object(record: WorkloadRecord, cache: SpecCache | None = None) -> api.Workload:
    """The stored Workload manifest, checked again (it may have been written around kuota)."""
    source = f"workload {record.key}"

    def runs(obj: api.Workload) -> None:  # reads no name: checked once per shape
        found = runnable.problems(obj, source)
        if found:
            raise api.ObjectError(found)

    if cache is not None:
        obj = cache.parse(record.spec(), source, runs)
    else:
        obj = parse_workload(record.spec(), source=source)
        runs(obj)
    key = f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
    if key != record.key:
        raise ValueError(f"workload {record.key}: stored spec names {key}")
    return obj


def workload_info(record: WorkloadRecord, cache: SpecCache | None = None) -> WorkloadInfo:
    """The core's view of a stored workload, queued by its queue-order timestamp."""
    if cache is not None:
        known = cache.info(record)
        if known is not None:
            return known
    return convert.workload(workload_object(record, cache), priority=record.priority,
                            created=record.queued_at)


def checked_info(record: WorkloadRecord, cache: SpecCache | None = None) -> WorkloadInfo | str:
    """The core's view of a stored workload, or why there is none: its record or spec is
    unreadable, or its spec fails the checks every submission passes."""
    if record.corrupt:
        return record.corrupt
    try:
        return workload_info(record, cache)
    except (api.ObjectError, ValueError) as exc:
        return str(exc)
    except RecursionError:
        return f"workload {record.key}: stored spec is nested too deeply"


def new_engine(configs: Configs, config: EngineConfig) -> Engine:
    # Pods stop when asked, not at once: an evicted workload holds its quota until its
    # pods are gone (the Evicting state).
    engine = Engine(config=config, wait_for_stop=True)
    for name, labels in configs.namespaces.items():
        engine.set_namespace(name, labels)
    engine.apply_all(configs.objects)
    return engine


def restore(engine: Engine, info: WorkloadInfo, admission: Admission, at: float,
            state: State) -> Record:
    """Put a workload that already holds quota back into the engine, usage counted."""
    return engine.restore(info, admission, at,
                          admitted=state in (State.ADMITTED, State.EVICTING))


def load(store: Store, config: EngineConfig | None = None) -> Loaded:
    """Everything the engine needs, from Redis; cycles are not run."""
    configs = load_configs(store)
    loaded = Loaded(new_engine(configs, config or EngineConfig()), configs, {}, {})
    specs = SpecCache()
    keys = store.indexes.unfinished_keys()  # (not the many finished ones a pool keeps)
    for record in store.workloads.records_not_in(SET_ASIDE, keys).values():
        loaded.put(record, specs)
    loaded.engine.drain_outbox()
    return loaded


def add(engine: Engine, record: WorkloadRecord, info: WorkloadInfo) -> Record:
    """Enter one stored, unfinished workload into the engine in its stored state."""
    if record.state in lifecycle.HOLDS_QUOTA and record.admission is not None:
        at = record.admitted_at or record.queued_at
        entry = restore(engine, info, record.admission, at, record.state)
        if record.state is State.EVICTING:  # its pods still stop: the quota stays held
            if record.after == "finish":
                engine.finishing(record.key, at)
            elif record.after == "deactivate":
                engine.deactivate(record.key, at, record.reason or "Inactive", record.message)
            else:
                engine.evict(record.key, at, record.reason or "Evicted", "", record.message)
        return entry
    entry = engine.submit(info)
    if record.state is State.INACTIVE:
        engine.deactivate(record.key, record.queued_at, record.reason or "Inactive",
                          record.message)
    return entry
