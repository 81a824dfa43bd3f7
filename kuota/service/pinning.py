"""Where an admitted gang may go: the nodes admission chose, or the pool dispatch chose.

Two decisions made before placement narrow it down:

* **Topology-aware admission** (:mod:`admission.topology`) already chose a
  node for every pod of a pod set that asked for a topology: the admission
  lists ``nodes`` (node, pod count) per pod set. Those pods are *pinned*: they
  go on exactly those nodes, in the listed order, or the gang waits — the
  gang placer must not pick other nodes, or the pods would leave the domain
  that admission promised (one rack, say). Pod sets without topology in the
  same gang are placed by the gang placer inside the pinned nodes' pool.
* **Multi-cluster dispatch** chose a member cluster (``admission.cluster``);
  for a pool member that is one pool, and the gang is placed only there.

Without either, every pool is tried in name order as before
(:func:`kuota.service.placing.place`).

Pinned pods still have to fit the node's free capacity *now*: pods of
workloads without topology may share the node, and topology-aware admission
only counts what topology-aware admissions placed. A pinned gang that does
not fit waits (``WaitingForNodes``) with the node and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kuota.service import placing
from kuota.service.placing import GangPod, Placed, Unplaceable
from placement.fit import check_fit
from placement.gang import GangPlacement, place_gang
from placement.model import ModelError, Node
from quota.workload import Admission


def pinned(admission: Admission) -> dict[str, tuple[str, ...]]:
    """Pod set -> the node of each of its pods, for pod sets admission placed on nodes."""
    out: dict[str, tuple[str, ...]] = {}
    for ps in admission.pod_sets:
        if ps.nodes:
            out[ps.name] = tuple(node for node, count in ps.nodes for _ in range(count))
    return out


def placement_key(admission: Admission, pools: Mapping[str, str]) -> str:
    """What besides pod sets and flavors decides where a gang may go (for grouping gangs
    that fit or fail alike): the pinned nodes and the dispatched pool."""
    nodes = pinned(admission)
    pool = pools.get(admission.cluster) if admission.cluster else None
    if not nodes and pool is None:
        return ""
    return repr((sorted(nodes.items()), pool))


def place(pods: Sequence[GangPod], admission: Admission, pools: Mapping[str, placing.Pool],
          *, pool: str | None = None) -> Placed | Unplaceable:
    """Place the gang where the admission allows; ``pool``: the one pool dispatch chose."""
    if pool is not None:
        if not pool:
            return Unplaceable(f"member {admission.cluster} (chosen by multi-cluster dispatch) "
                               "is not a Redis worker pool")
        if pool not in pools:
            return Unplaceable(f"pool {pool} (chosen by multi-cluster dispatch) has no Ready "
                               "nodes")
        pools = {pool: pools[pool]}
    nodes = pinned(admission)
    if not nodes:
        return placing.place(pods, pools)
    return _place_pinned(pods, nodes, {name: placing.members(p) for name, p in pools.items()})


def _place_pinned(pods: Sequence[GangPod], nodes: Mapping[str, tuple[str, ...]],
                  pools: Mapping[str, Sequence[Node]]) -> Placed | Unplaceable:
    pool_of = {node.name: name for name, members in pools.items() for node in members}
    current = {node.name: node for members in pools.values() for node in members}
    wanted = sorted({n for names in nodes.values() for n in names})
    missing = [n for n in wanted if n not in current]
    if missing:
        return Unplaceable(f"node(s) {', '.join(missing)} chosen by topology-aware admission "
                           "are not Ready")
    chosen_pools = sorted({pool_of[n] for n in wanted})
    if len(chosen_pools) > 1:
        return Unplaceable(f"nodes chosen by topology-aware admission span pools "
                           f"{', '.join(chosen_pools)}; a gang runs inside one pool")
    pool = chosen_pools[0]
    assignments: dict[int, str] = {}
    touched: set[str] = set()
    taken = dict.fromkeys(nodes, 0)
    free: list[GangPod] = []
    for pod in pods:
        names = nodes.get(pod.pod_set)
        if names is None:
            free.append(pod)
            continue
        if taken[pod.pod_set] >= len(names):
            return Unplaceable(f"pod set {pod.pod_set}: admission placed {len(names)} pod(s), "
                               "the gang has more")
        name = names[taken[pod.pod_set]]
        taken[pod.pod_set] += 1
        node = current[name]
        try:
            fit = check_fit(node, pod.requirements)
        except ModelError as exc:
            return Unplaceable(str(exc))
        if not fit.fits:
            return Unplaceable(f"pod {pod.index} ({pod.pod_set}) pinned to node {name} by "
                               f"topology-aware admission: {'; '.join(fit.reasons)}")
        current[name] = node.with_pod(pod.requirements)
        touched.add(name)
        assignments[pod.index] = name
    if free:
        members = [current[node.name] for node in pools[pool]]
        try:
            result = place_gang([p.requirements for p in free], members, placing.SCORER)
        except ModelError as exc:
            return Unplaceable(str(exc))
        if not isinstance(result, GangPlacement):
            return Unplaceable(f"pool {pool}: {result.reason}")
        for pod, name in zip(free, result.assignments, strict=True):
            assignments[pod.index] = name
        current.update(result.nodes)
        touched.update(result.nodes)
    return Placed(pool, tuple(assignments[p.index] for p in pods),
                  {name: current[name] for name in sorted(touched)})
