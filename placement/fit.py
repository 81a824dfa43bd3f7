"""Does a pod fit a node? kube-scheduler's default filters, as one pure check.

The checks run in kube-scheduler's filter order and the first failing one
answers, with kube-scheduler's own reason strings so an operator sees the
messages they know from ``kubectl describe pod``:

1. **NodeUnschedulable** — a cordoned node (``spec.unschedulable``) takes a pod
   only if it tolerates ``node.kubernetes.io/unschedulable:NoSchedule``.
2. **TaintToleration** — every ``NoSchedule``/``NoExecute`` taint must be
   tolerated; ``PreferNoSchedule`` never filters.
3. **NodeAffinity** — every ``nodeSelector`` label must match, and when the pod
   has required node affinity, at least one of its terms (terms are ORed,
   expressions inside a term ANDed).
4. **NodeResourcesFit** — for every resource the pod requests, and one pod
   slot, ``requested + request <= allocatable``; all short resources are
   reported at once ("Insufficient nvidia.com/gpu", "Too many pods").

Failures 1-3 are *unresolvable*: evicting pods cannot change them, so the
extender reports them in ``FailedAndUnresolvableNodes`` and kube-scheduler's
preemption skips those nodes. Resource shortage is *resolvable*.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from placement.model import (
    BLOCKING_EFFECTS,
    POD_SLOT,
    PODS,
    Node,
    PodRequirements,
    Taint,
    TaintEffect,
)

REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
REASON_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS: Final = "Too many pods"

# A node that does not publish a pod limit (a worker-pool node, say) has none.
_NO_POD_LIMIT: Final = 1 << 62
_UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", TaintEffect.NO_SCHEDULE)


@dataclass(frozen=True, slots=True)
class FitResult:
    """Empty ``reasons`` means the pod fits."""

    reasons: tuple[str, ...] = ()
    unresolvable: bool = False

    @property
    def fits(self) -> bool:
        return not self.reasons


FITS: Final = FitResult()


def untolerated_taint(node: Node, pod: PodRequirements) -> Taint | None:
    """The first blocking taint none of the pod's tolerations matches."""
    for taint in node.taints:
        if taint.effect not in BLOCKING_EFFECTS:
            continue
        if not any(t.tolerates(taint) for t in pod.tolerations):
            return taint
    return None


def matches_affinity(node: Node, pod: PodRequirements) -> bool:
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    terms = pod.required_terms
    return terms is None or any(term.matches(node) for term in terms)


def insufficient_resources(
    node: Node, pod: PodRequirements, ignored: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """Reasons for every resource the node is short of, in a stable order."""
    reasons: list[str] = []
    allocatable, requested = node.allocatable, node.requested
    if requested.get(PODS, 0) + POD_SLOT > allocatable.get(PODS, _NO_POD_LIMIT):
        reasons.append(REASON_TOO_MANY_PODS)
    for resource, amount in pod.requests.items():
        if amount == 0 or resource in ignored:
            continue
        if requested.get(resource, 0) + amount > allocatable.get(resource, 0):
            reasons.append(f"Insufficient {resource}")
    return tuple(reasons)


def check_constraints(node: Node, pod: PodRequirements) -> FitResult:
    """The three unresolvable filters: cordon, taints, node affinity/selector."""
    if node.unschedulable and not any(t.tolerates(_UNSCHEDULABLE_TAINT)
                                      for t in pod.tolerations):
        return FitResult((REASON_UNSCHEDULABLE,), unresolvable=True)
    if node.taints:
        taint = untolerated_taint(node, pod)
        if taint is not None:
            return FitResult((f"node(s) had untolerated taint {taint}",), unresolvable=True)
    if (pod.node_selector or pod.required_terms is not None) and not matches_affinity(node, pod):
        return FitResult((REASON_AFFINITY,), unresolvable=True)
    return FITS


def check_fit(
    node: Node, pod: PodRequirements, *, ignored_resources: frozenset[str] = frozenset()
) -> FitResult:
    """Run the four filters in kube-scheduler's order; the first failure answers.

    ``ignored_resources`` are left out of the resource check (kube-scheduler's
    ``ignoredResources``; an extender's ``ignoredByScheduler`` resources).
    """
    constraints = check_constraints(node, pod)
    if constraints is not FITS:
        return constraints
    allocatable, requested = node.allocatable, node.requested
    # Fast path (most nodes, most calls): everything fits; reasons only on failure.
    if requested.get(PODS, 0) + POD_SLOT <= allocatable.get(PODS, _NO_POD_LIMIT):
        for resource, amount in pod.requests.items():
            if (amount and requested.get(resource, 0) + amount > allocatable.get(resource, 0)
                    and resource not in ignored_resources):
                break
        else:
            return FITS
    return FitResult(insufficient_resources(node, pod, ignored_resources))


def summarize(results: Iterable[FitResult], total: int) -> str:
    """kube-scheduler's event text: ``0/3 nodes are available: 2 Insufficient
    cpu, 1 node(s) were unschedulable.`` (reasons counted over nodes)."""
    counts: Counter[str] = Counter()
    for result in results:
        counts.update(result.reasons)
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(),
                                                              key=lambda kv: kv[0]))
    return f"0/{total} nodes are available: {parts}." if parts else \
        f"0/{total} nodes are available."
