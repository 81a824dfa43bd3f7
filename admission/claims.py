"""Claims: the quota a preemptor holds while its victims stop.

With ``wait_for_stop`` (the Kubernetes operator, the Redis leader) a preemptor is not
admitted when it evicts: its victims keep their quota until their pods are gone, and it
is tried again then. Meanwhile what they will free is *claimed* for it and counted in
every cycle's snapshot, so that no other workload is admitted into that room. One that
were would be the next victim, and the same workloads would be evicted and readmitted
without end.

A claim lives while its workload waits (Pending):

* a cycle that tries the workload takes its claim out of the snapshot, since the
  workload asks for that quota again itself; the cycle gets it as ``held``
  (:func:`admission.cycle.schedule`), and a head the cycle leaves untried (cut short by
  ``enough``) keeps it;
* a workload that is admitted, evicted, deactivated or ended gives its claim up, and so
  does one whose record the adapter dropped (a cancelled preemptor, a deleted Workload):
  its name may come back as a new workload, which claims anew.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from queueing.manager import Head
from quota.resources import FRVector
from quota.tree import QuotaTree

#: A preemptor's claim: its ClusterQueue and the usage it will take there.
Claim = tuple[str, FRVector]


@dataclass(slots=True)
class Claims:
    """The claims of the preemptors waiting for their victims, by workload key."""

    _by_key: dict[str, Claim] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._by_key)

    def claim(self, key: str, cluster_queue: str, usage: FRVector) -> None:
        """Workload ``key`` evicted victims and waits for them to stop to take ``usage``."""
        self._by_key[key] = (cluster_queue, usage)

    def drop(self, key: str) -> None:
        """Workload ``key`` ended: it holds nothing any more."""
        self._by_key.pop(key, None)

    def for_cycle(self, tree: QuotaTree, tried: Collection[str],
                  waiting: Callable[[str], bool]) -> dict[str, Claim]:
        """Set up a cycle over the heads ``tried``: drop the claims of workloads no longer
        ``waiting``, count those of the others in ``tree`` (the cycle's snapshot), and take
        out and return those of the heads tried (the cycle's ``held``)."""
        for key in [k for k in self._by_key if not waiting(k)]:
            del self._by_key[key]
        for key, (cluster_queue, usage) in self._by_key.items():
            if key not in tried and cluster_queue in tree.queues:
                tree.add(cluster_queue, usage)
        return {key: self._by_key.pop(key) for key in tried if key in self._by_key}

    def keep_untried(self, untried: Iterable[Head], held: dict[str, Claim]) -> None:
        """The heads a cycle cut short left untried keep the claims it was ``held``."""
        for head in untried:
            claim = held.get(head.info.key)
            if claim is not None:
                self._by_key[head.info.key] = claim
