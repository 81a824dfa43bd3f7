"""One scheduling cycle: values in, decisions out.

``schedule(snapshot, heads, namespace_labels)`` reads as the numbered script
Kueue's scheduler follows:

1. **Nominate** every head (one workload per ClusterQueue): reject at once
   what its ClusterQueue or LocalQueue refuses (inactive, stopped, namespace
   not selected); otherwise assign flavors against the snapshot.
2. **Order** the nominated: workloads that fit without borrowing before
   those that borrow, then higher priority, then older.
3. **Admit** in that order, re-checking each against the snapshot as earlier
   admissions of this cycle consume quota; each admission is added to the
   snapshot at once. A workload that fit at nomination but no longer does is
   *skipped* and tried again next cycle; one that cannot fit is
   *inadmissible* and steps aside until something changes.

The cycle never touches the cache, the queues or a store: the engine applies
the result (assume, block, persist).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from admission import flavors
from queueing.manager import Head
from quota import tree as qt
from quota.cache import Snapshot
from quota.resources import FlavorResource
from quota.workload import Admission, WorkloadInfo


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a head was not admitted."""

    head: Head
    reason: str
    message: str


@dataclass(slots=True)
class CycleResult:
    admitted: list[tuple[Head, Admission]] = field(default_factory=list)
    #: Could not be admitted now; steps aside until something changes.
    inadmissible: list[Verdict] = field(default_factory=list)
    #: Fit at nomination, lost out to an earlier admission of this cycle.
    skipped: list[Verdict] = field(default_factory=list)

    @property
    def tried(self) -> int:
        return len(self.admitted) + len(self.inadmissible) + len(self.skipped)


@dataclass(slots=True)
class _Entry:
    head: Head
    assignment: flavors.Assignment


def schedule(snapshot: Snapshot, heads: Sequence[Head],
             namespace_labels: Callable[[str], Mapping[str, str]]) -> CycleResult:
    result = CycleResult()
    # 1. Nominate.
    entries: list[_Entry] = []
    for head in heads:
        refusal = _refusal(snapshot, head, namespace_labels)
        if refusal is not None:
            result.inadmissible.append(Verdict(head, *refusal))
            continue
        cq = snapshot.cluster_queues[head.cluster_queue]
        assignment = flavors.assign(head.info, cq, snapshot)
        if assignment.mode is not flavors.Mode.FIT:
            result.inadmissible.append(Verdict(head, assignment.reason, assignment.message))
            continue
        entries.append(_Entry(head, assignment))
    # 2. Order.
    entries.sort(key=_order)
    # 3. Admit.
    for entry in entries:
        head, assignment = entry.head, entry.assignment
        node = snapshot.tree.queues[head.cluster_queue]
        if not _still_fits(node, assignment.usage):
            result.skipped.append(Verdict(head, flavors.WAITING_FOR_QUOTA,
                                          "Workload no longer fits after processing another "
                                          "workload"))
            continue
        admission = Admission(head.cluster_queue, tuple(assignment.pod_sets),
                              borrowing=assignment.borrows)
        snapshot.tree.add(head.cluster_queue, assignment.usage)
        result.admitted.append((head, admission))
    return result


def _order(entry: _Entry) -> tuple[bool, int, float, str]:
    info: WorkloadInfo = entry.head.info
    return (entry.assignment.borrows, -info.priority, info.created, info.key)


def _still_fits(node: qt.QuotaNode, usage: Mapping[FlavorResource, int]) -> bool:
    return all(amount <= qt.available(node, fr) for fr, amount in usage.items())


def _refusal(snapshot: Snapshot, head: Head,
             namespace_labels: Callable[[str], Mapping[str, str]]) -> tuple[str, str] | None:
    name = head.cluster_queue
    inactive = snapshot.inactive.get(name)
    if inactive is not None:
        if inactive.reason == "Stopped":
            return "ClusterQueueStopped", f"ClusterQueue {name} is stopped: {inactive.message}"
        return "Inactive", f"ClusterQueue {name} is inactive: {inactive.message}"
    lq = head.local_queue
    if lq.stop_policy != "None":
        return "LocalQueueStopped", f"LocalQueue {lq.key} is stopped ({lq.stop_policy})"
    cq = snapshot.cluster_queues[name]
    namespace = head.info.namespace
    if cq.namespace_selector is None or not cq.namespace_selector.matches(
            namespace_labels(namespace)):
        hint = (" (it has no namespaceSelector, which selects no namespace; use {} for all)"
                if cq.namespace_selector is None else "")
        return ("NamespaceNotAllowed",
                f"namespace {namespace} doesn't match the namespaceSelector of ClusterQueue "
                f"{name}{hint}")
    return None
