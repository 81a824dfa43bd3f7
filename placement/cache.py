"""A cluster's nodes and the usage of the pods bound to them, fed by events.

kube-scheduler sends an extender only node *names* when the extender says it
is ``nodeCacheCapable``, so the extender must know every node and — since a
Node object does not say what runs on it — every bound pod, to compute
``requested``. This cache holds both. It is pure: the Kubernetes edge turns
watch events into calls of :meth:`ClusterCache.upsert_node`,
:meth:`~ClusterCache.delete_node`, :meth:`~ClusterCache.upsert_pod`,
:meth:`~ClusterCache.delete_pod` (tests call them directly), and reads
:meth:`~ClusterCache.node`.

Rules, as kube-scheduler's own cache applies them:

* a pod counts on a node once it is bound (``spec.nodeName``) and until it
  ends (phase ``Succeeded``/``Failed``) or is deleted;
* a pod seen again (MODIFIED) replaces its previous contribution, so
  re-delivered events are harmless;
* pods may arrive before their node: usage is kept per node name and applied
  when the node appears.

Each pod may belong to a *gang* (a key the edge derives from labels); the
cache answers which nodes host a gang's bound pods, for the topology scorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from placement.model import POD_SLOT, PODS, Node, PodRequirements
from quota.resources import Amount


@dataclass(frozen=True, slots=True)
class BoundPod:
    node: str
    requests: dict[str, Amount]
    nonzero: dict[str, Amount]
    gang: str | None = None


class ClusterCache:
    def __init__(self) -> None:
        self._bare: dict[str, Node] = {}  # nodes as their objects say, nothing requested
        self._nodes: dict[str, Node] = {}  # with usage applied
        self._pods: dict[str, BoundPod] = {}  # by uid
        self._usage: dict[str, dict[str, Amount]] = {}
        self._nonzero: dict[str, dict[str, Amount]] = {}
        self._gangs: dict[str, dict[str, str]] = {}  # gang → uid → node
        self.synced = False

    # -- reads -------------------------------------------------------------

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def lookup(self, names: Sequence[str]) -> list[Node | None]:
        """``node(name)`` for many names at once (the extender's hot path)."""
        get = self._nodes.get
        return [get(name) for name in names]

    def with_usage(self, node: Node) -> Node:
        """``node`` (e.g. from a request body) with the cached usage of its pods."""
        return replace(node, requested=dict(self._usage.get(node.name, {})),
                       nonzero_requested=dict(self._nonzero.get(node.name, {})))

    def node_names(self) -> list[str]:
        return sorted(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def pod_uids(self) -> list[str]:
        return sorted(self._pods)

    @property
    def pod_count(self) -> int:
        return len(self._pods)

    def gang_nodes(self, gang: str) -> list[str]:
        """Node names hosting the gang's bound pods, one entry per pod."""
        return sorted(self._gangs.get(gang, {}).values())

    # -- writes ------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        bare = replace(node, requested={}, nonzero_requested=None)
        self._bare[node.name] = bare
        self._nodes[node.name] = self.with_usage(bare)

    def delete_node(self, name: str) -> None:
        self._bare.pop(name, None)
        self._nodes.pop(name, None)

    def upsert_pod(self, uid: str, node: str | None, pod: PodRequirements, *,
                   finished: bool = False, gang: str | None = None) -> None:
        """Record a pod; unbound (``node=None``) or finished pods use nothing."""
        self.delete_pod(uid)
        if node is None or finished:
            return
        bound = BoundPod(node, dict(pod.requests), dict(pod.score_requests), gang)
        self._pods[uid] = bound
        self._apply(bound, +1)
        if gang is not None:
            self._gangs.setdefault(gang, {})[uid] = node

    def delete_pod(self, uid: str) -> None:
        bound = self._pods.pop(uid, None)
        if bound is None:
            return
        self._apply(bound, -1)
        if bound.gang is not None:
            members = self._gangs.get(bound.gang, {})
            members.pop(uid, None)
            if not members:
                self._gangs.pop(bound.gang, None)

    def clear(self) -> None:
        """Forget everything (before a fresh list after a lost watch)."""
        for table in (self._bare, self._nodes, self._pods, self._usage, self._nonzero,
                      self._gangs):
            table.clear()
        self.synced = False

    def _apply(self, bound: BoundPod, sign: int) -> None:
        for totals, vector in ((self._usage, bound.requests), (self._nonzero, bound.nonzero)):
            usage = totals.setdefault(bound.node, {})
            for resource, amount in vector.items():
                usage[resource] = usage.get(resource, 0) + sign * amount
            usage[PODS] = usage.get(PODS, 0) + sign * POD_SLOT
            for resource in [r for r, v in usage.items() if v == 0]:
                del usage[resource]
            if not usage:
                del totals[bound.node]
        bare = self._bare.get(bound.node)
        if bare is not None:
            self._nodes[bound.node] = self.with_usage(bare)
