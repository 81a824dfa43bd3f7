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
from queueing.store import Store, WorkloadRecord
from queueing.store.objects import KINDS
from quota import api, convert, lifecycle
from quota.api.names import dns_label_error, dns_subdomain_error
from quota.config import EngineConfig
from quota.lifecycle import State
from quota.workload import Admission, WorkloadInfo

log = logging.getLogger(__name__)

#: States the scheduler leaves alone: done, or set aside as unschedulable.
SET_ASIDE: Final = frozenset({State.FINISHED, State.INVALID})


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


def load_configs(store: Store) -> Configs:
    """Queue objects as core configs, in dependency order (flavors first)."""
    configs = Configs(namespaces=store.objects.namespaces())
    for kind in KINDS:
        for name, manifest in store.objects.manifests(kind).items():
            try:
                obj = api.parse_object(manifest, source="redis")
            except api.ObjectError as exc:
                configs.problems[f"{kind}/{name}"] = str(exc)
                log.warning("skipping stored %s %s: %s", kind, name, exc)
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
                configs.objects.append(convert.config(obj))
    return configs


class SpecCache:
    """Workloads already checked during one rebuild, by their manifest without its name.

    Checking a stored manifest again (the models, every rule) is most of what a rebuild
    costs, and the workloads of one job array or one benchmark class differ only in
    their names: a manifest equal to one checked before but for ``metadata.name`` is that
    object with the name replaced, the name checked on its own (the only rule that reads
    it). A rebuild keeps every shape it meets; a leader keeps the ``limit`` it met last
    (new submissions of a job array or a sweep share a few shapes)."""

    def __init__(self, limit: int | None = None) -> None:
        self._checked: OrderedDict[str, api.Workload] = OrderedDict()
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
        shape = json.dumps({**spec, "metadata": {**meta, "name": "", "namespace": ""}},
                           sort_keys=True, separators=(",", ":"), default=str)
        checked = self._checked.get(shape)
        if checked is None:
            checked = parse_workload(spec, source=source)
            if check is not None:
                check(checked)
            self._checked[shape] = checked
            if self._limit is not None and len(self._checked) > self._limit:
                self._checked.popitem(last=False)
            return checked
        if self._limit is not None:
            self._checked.move_to_end(shape)
        error = dns_subdomain_error(name)
        if error is not None:
            raise api.ObjectError([api.Problem(source, "Workload", name, "metadata.name",
                                               error)])
        return checked.model_copy(update={"metadata": checked.metadata.model_copy(
            update={"name": name, "namespace": namespace})})


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
    engine = new_engine(configs, config or EngineConfig())
    live: dict[str, WorkloadRecord] = {}
    invalid: dict[str, str] = {}
    dispatched: dict[str, WorkloadRecord] = {}
    unfinished = store.workloads.keys_not_in(SET_ASIDE)
    specs = SpecCache()
    for record in store.workloads.get_many(unfinished).values():
        if record.state in SET_ASIDE:  # finished meanwhile
            continue
        if record.dispatched:
            dispatched[record.key] = record
            continue
        live[record.key] = record
        checked = checked_info(record, specs)
        if isinstance(checked, str):
            invalid[record.key] = checked
            continue
        with blame(record.key):
            add(engine, record, checked)
    engine.drain_outbox()
    return Loaded(engine, configs, live, invalid, dispatched)


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
