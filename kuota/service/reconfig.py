"""Queue objects changed under a running Redis leader: the difference taken in place.

Every apply or delete of a stored queue object posts a ``config`` entry to the
event stream. A leader used to end at such an entry and a new one to load the
store whole — at 1,000 ClusterQueues and 50,000 pending workloads, about a
second in which nothing was admitted, to raise one quota. The engine takes
config changes while it runs (the operator feeds it so), so the leader now
reads the queue objects again and hands the engine what differs
(:func:`take_changes`): ClusterQueues, Cohorts, LocalQueues and ResourceFlavors
added, changed or deleted, and namespace labels. The engine keeps its queues,
backoffs and preemption claims, as Kueue's do across a config change; a lone
quota change recounts only its cohort tree
(:meth:`quota.cache.QuotaCache.set_cluster_queue`).

A ResourceFlavor also tells the placer which nodes a gang may use (its node
labels, taints and tolerations): after a change the placer judges again which
kinds of gang could ever fit, and gives the gangs it set aside as fitting no
node another chance (:meth:`kuota.service.placer.Placer.flavors_changed`) — a
typo in ``nodeLabels`` fixed lets them run without a restart.

What else the stored objects feed is read once when a leader starts, so a change
to it still rebuilds the leader: AdmissionChecks (pool members' dispatch),
Topologies, MemberClusters and MultiClusterConfigs, priority classes, a
namespace deleted, and any stored object that cannot be read.
"""

from __future__ import annotations

from collections.abc import Iterable

from admission.engine import ConfigObject, Engine
from kuota.service.rebuild import Configs, load_configs
from queueing.store import Store
from quota.config import ClusterQueueConfig, CohortConfig, FlavorConfig, LocalQueueConfig

#: The configs a running leader takes in place, by the kind the engine deletes them as.
IN_PLACE = {ClusterQueueConfig: "ClusterQueue", CohortConfig: "Cohort",
            LocalQueueConfig: "LocalQueue", FlavorConfig: "ResourceFlavor"}


def _by_name(objects: Iterable[ConfigObject]) -> dict[tuple[str, str], ConfigObject]:
    named: dict[tuple[str, str], ConfigObject] = {}
    for obj in objects:
        name = obj.key if isinstance(obj, LocalQueueConfig) else obj.name
        named[(IN_PLACE.get(type(obj), type(obj).__name__), name)] = obj
    return named


def take_changes(engine: Engine, old: Configs, new: Configs) -> bool:
    """Hand ``engine`` (built from ``old``) what ``new`` changes; False, changing nothing,
    when a change cannot be taken in place (module doc): the leader is rebuilt then."""
    if new.problems or old.problems or new.topologies != old.topologies \
            or new.members != old.members \
            or new.multicluster_configs != old.multicluster_configs \
            or new.priority_classes != old.priority_classes \
            or not old.namespaces.keys() <= new.namespaces.keys():
        return False
    before, after = _by_name(old.objects), _by_name(new.objects)
    changed = [obj for ref, obj in after.items()
               if (old_obj := before.get(ref)) is not obj and old_obj != obj]
    gone = [ref for ref in before if ref not in after]
    if any(type(obj) not in IN_PLACE for obj in changed) \
            or any(kind not in IN_PLACE.values() for kind, _ in gone):
        return False
    if len(changed) == 1 and not gone:
        engine.apply(changed[0])  # (alone: a quota change recounts only its cohort tree)
    elif changed or gone:
        with engine.configuring():
            for kind, name in gone:
                engine.delete(kind, name)
            for obj in changed:
                engine.apply(obj)
    for name, labels in new.namespaces.items():
        if old.namespaces.get(name) != labels:
            engine.set_namespace(name, labels)
    return True


def flavors(configs: Configs) -> list[FlavorConfig]:
    """The ResourceFlavors among the queue objects."""
    return [obj for obj in configs.objects if isinstance(obj, FlavorConfig)]


def read_again(store: Store, engine: Engine, configs: Configs) -> Configs | None:
    """The queue objects read again (parsing only the changed ones) and their changes
    handed to ``engine``, built from ``configs``: the new configs, or None, changing
    nothing, when the engine cannot take them in place."""
    read = load_configs(store, configs.parsed)
    return read if take_changes(engine, configs, read) else None
