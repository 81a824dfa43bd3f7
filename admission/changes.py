"""Which queues changed: the engine's stamps per ClusterQueue and LocalQueue.

Statuses and gauges report per queue what its workloads add up to: how many wait,
reserve and are admitted, and the quota they reserve and use. Counted afresh every
second over every workload, that cost an operator with 1,000 ClusterQueues and 50,000
Workloads 80 ms a second though nothing had changed. Instead the engine *stamps* a queue
whenever a workload in it changes in a way those figures see — it is submitted, changes
state, or takes or gives back quota — and keeps which unfinished workloads each
LocalQueue holds. A reader keeps the stamp it counted a queue at and counts again only
the queues stamped since (:class:`kuota.operator.tallies.Tallies`). Likewise a count
of the pending reasons given tells the operator when no waiting workload has a new one
to write.

Stamps only grow, so any number of readers can each keep their own. A ClusterQueue is
stamped under the name its workloads' admissions carry, a LocalQueue under its
``namespace/name`` key — including names no queue object has (yet).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from quota.workload import Admission, WorkloadInfo


@dataclass(eq=False, slots=True)
class Changes:
    #: The last stamp given.
    stamp: int = 0
    #: ClusterQueue name -> the stamp of its last change.
    cluster_queues: dict[str, int] = field(default_factory=dict)
    #: LocalQueue key -> the stamp of its last change.
    local_queues: dict[str, int] = field(default_factory=dict)
    #: LocalQueue key -> the keys of its workloads not finished (in submission order).
    members: dict[str, dict[str, None]] = field(default_factory=dict)
    #: Counts the pending reasons given: while it stays the same, no waiting workload has a
    #: new reason to report.
    reasons: int = 0

    def touch(self, info: WorkloadInfo, admission: Admission | None) -> None:
        """The workload ``info`` changed: its LocalQueue, and the ClusterQueue whose quota
        ``admission`` holds (if any), are stamped."""
        self.stamp += 1
        self.local_queues[info.local_queue_key] = self.stamp
        if admission is not None:
            self.cluster_queues[admission.cluster_queue] = self.stamp

    def touch_cluster_queue(self, name: str) -> None:
        self.stamp += 1
        self.cluster_queues[name] = self.stamp

    def entered(self, info: WorkloadInfo) -> None:
        """A workload was submitted."""
        members = self.members.get(info.local_queue_key)
        if members is None:
            members = self.members[info.local_queue_key] = {}
        members[info.key] = None
        self.touch(info, None)

    def left(self, info: WorkloadInfo) -> None:
        """A workload finished: its LocalQueue counts it no more."""
        lq = info.local_queue_key
        members = self.members.get(lq)
        if members is not None:
            members.pop(info.key, None)
            if not members:
                del self.members[lq]
        self.touch(info, None)
