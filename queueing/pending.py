"""The pending workloads of one ClusterQueue, in admission order.

Order: higher priority first, then the older queue-order timestamp (creation,
or the last eviction when the requeuing strategy says so), then the key — a
total order, so every run decides the same way.

Workloads are grouped into *equivalence classes* (same pod sets, requests,
constraints, namespace, LocalQueue and priority, see :class:`quota.workload.WorkloadInfo`).
The queue's head is the best head among classes that are not blocked; a
two-level heap (one heap per class, one heap of class heads) finds it in
O(log n).

What happens when the head cannot be admitted depends on the strategy:

* ``BestEffortFIFO`` — the head's whole class steps aside (is *blocked*):
  every member would fail for the same reason, so none is tried again until
  something changes (quota freed in the cohort, a config change). The next
  class's head is tried meanwhile. Trying one workload per class instead of
  every waiting workload keeps a decision's cost independent of queue length.
* ``StrictFIFO`` — the head stays the head and blocks the whole queue until
  something changes; nothing behind it is tried.

A preemptor keeps its turn: once its victims are evicted it is *pinned* as
its queue's head until it is admitted, removed or refused. Without this, the
quota its victims free could wake an older head of its queue that still
cannot fit; the preemptor would not be tried, a victim would be admitted back
into the freed quota, and the preemptor would evict it again — a loop with no
end at one instant.

Freed quota retries only heads that usage stopped: a head refused for a
reason that depends on specs alone (``ExceedsMaxQuota``, ``NoMatchingFlavor``,
a stopped or inactive queue, an unselected namespace) would fail again the same
way, so only a config change retries it. Beyond saving work this matters for
progress: a preemptor must be its queue's head in the cycle after its victims
are evicted, not shadowed by an older head that their freed quota woke up
only to fail again — meanwhile the victims would take the quota back.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass

from quota.workload import WorkloadInfo

SortKey = tuple[int, float, str]

#: Refusal reasons no change of usage can cure (see the module docstring).
SPEC_BOUND = frozenset({"ExceedsMaxQuota", "NoMatchingFlavor", "NamespaceNotAllowed",
                        "ClusterQueueStopped", "LocalQueueStopped", "Inactive"})


def sort_key(info: WorkloadInfo, timestamp: float) -> SortKey:
    return (-info.priority, timestamp, info.key)


@dataclass(slots=True)
class _Item:
    info: WorkloadInfo
    key: SortKey


class PendingQueue:
    def __init__(self, name: str, strategy: str = "BestEffortFIFO") -> None:
        self.name = name
        self.strategy = strategy
        self._items: dict[str, _Item] = {}
        self._classes: dict[int, list[tuple[SortKey, str]]] = {}
        self._tops: list[tuple[SortKey, int]] = []
        #: Waiting workloads per class (the class heaps keep stale entries): a blocked
        #: count for the metrics without walking every waiting workload.
        self._counts: dict[int, int] = {}
        #: Blocked classes → (reason, message) of the failed try.
        self.blocked: dict[int, tuple[str, str]] = {}
        #: StrictFIFO: the head failed and holds the queue.
        self.held: tuple[str, str] | None = None
        #: A preemptor whose victims are being evicted: the next head (see the docstring).
        self.pinned: str | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def push(self, info: WorkloadInfo, timestamp: float) -> None:
        if info.key in self._items:
            self.remove(info.key)
        item = self._items[info.key] = _Item(info, sort_key(info, timestamp))
        members = self._classes.setdefault(info.equivalence, [])
        heapq.heappush(members, (item.key, info.key))
        self._counts[info.equivalence] = self._counts.get(info.equivalence, 0) + 1
        if info.equivalence not in self.blocked and members[0][1] == info.key:
            heapq.heappush(self._tops, (item.key, info.equivalence))
        if self.strategy == "StrictFIFO" and self.held is not None:
            # A newcomer that sorts before the holder gets its own try.
            head = self._peek()
            if head is not None and head.info.key == info.key:
                self.held = None

    def remove(self, key: str) -> WorkloadInfo | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        if key == self.pinned:
            self.pinned = None
        eq = item.info.equivalence
        left = self._counts[eq] - 1
        if left:
            self._counts[eq] = left
        else:
            del self._counts[eq]
        members = self._classes[eq]
        was_head = members[0][1] == key
        self._clean(members)
        if not members:
            del self._classes[eq]
            self.blocked.pop(eq, None)
        elif was_head and eq not in self.blocked:
            heapq.heappush(self._tops, (members[0][0], eq))
        return item.info

    def head(self) -> WorkloadInfo | None:
        """The next workload to try, or None when empty or everything is blocked."""
        if self.held is not None:
            return None
        if self.pinned is not None:
            pinned = self._items[self.pinned]
            if pinned.info.equivalence not in self.blocked:
                return pinned.info
        item = self._peek()
        return item.info if item is not None else None

    def pin(self, key: str) -> None:
        """``key`` evicted workloads to make room: it is the next head once not blocked."""
        if key in self._items:
            self.pinned = key

    def block(self, info: WorkloadInfo, reason: str, message: str) -> None:
        """``info`` was tried and cannot be admitted now; step aside per strategy."""
        if info.key not in self._items:
            return
        if info.key == self.pinned:
            self.pinned = None
        if self.strategy == "StrictFIFO":
            self.held = (reason, message)
        else:
            self.blocked[info.equivalence] = (reason, message)

    def unblock(self, *, quota_freed: bool = False) -> None:
        """Something changed: what is blocked gets another try — with ``quota_freed``
        only what waited for quota, otherwise everything."""
        if self.held is not None and not (quota_freed and self.held[0] in SPEC_BOUND):
            self.held = None
        for eq, (reason, _) in list(self.blocked.items()):
            if quota_freed and reason in SPEC_BOUND:
                continue
            del self.blocked[eq]
            members = self._classes.get(eq)
            if members:
                heapq.heappush(self._tops, (members[0][0], eq))

    @property
    def stuck(self) -> bool:
        """Whether something here is blocked or held (waits for an unblock)."""
        return bool(self.blocked) or self.held is not None

    def why_blocked(self, info: WorkloadInfo) -> tuple[str, str] | None:
        if self.held is not None:
            return self.held
        return self.blocked.get(info.equivalence)

    def blocked_count(self) -> int:
        """How many waiting workloads :meth:`why_blocked` names a reason for (metrics)."""
        if self.held is not None:
            return len(self._items)
        counts = self._counts
        return sum(counts.get(eq, 0) for eq in self.blocked)

    def set_aside(self, info: WorkloadInfo) -> tuple[str, str] | None:
        """Why ``info`` is set aside as inadmissible: its class was refused for a reason no
        freed quota cures (:data:`SPEC_BOUND`), so it blocks no one; None otherwise. (A
        StrictFIFO queue held by its head is blocked by it: that head is not set aside.)"""
        why = self.blocked.get(info.equivalence)
        return why if why is not None and why[0] in SPEC_BOUND else None

    def classes(self) -> Iterator[WorkloadInfo]:
        """One waiting member of each class not blocked (they all ask for the same)."""
        for eq, members in list(self._classes.items()):
            if eq not in self.blocked:
                self._clean(members)
                if members:
                    yield self._items[members[0][1]].info

    def members(self, info: WorkloadInfo) -> list[str]:
        """The keys of the waiting workloads of ``info``'s class."""
        eq = info.equivalence
        return list(dict.fromkeys(key for _, key in self._classes.get(eq, ())
                                  if key in self._items
                                  and self._items[key].info.equivalence == eq))

    def ordered(self) -> Iterator[WorkloadInfo]:
        """Every waiting workload in admission order (for positions and listings): the
        ones that can run first, then those set aside as inadmissible (:meth:`set_aside`),
        as Kueue's visibility lists its inadmissible workloads after the active heap."""
        aside = {eq for eq, (reason, _) in self.blocked.items() if reason in SPEC_BOUND}
        for item in sorted(self._items.values(),
                           key=lambda i: (i.info.equivalence in aside, i.key)):
            yield item.info

    def _peek(self) -> _Item | None:
        tops = self._tops
        while tops:
            key, eq = tops[0]
            members = self._classes.get(eq)
            if members and eq not in self.blocked:
                self._clean(members)
                if members and members[0][0] == key:
                    return self._items[members[0][1]]
            heapq.heappop(tops)
        return None

    def _clean(self, members: list[tuple[SortKey, str]]) -> None:
        """Drop removed workloads from the top of a class heap (lazy deletion)."""
        items = self._items
        while members:
            key, wl = members[0]
            item = items.get(wl)
            if item is not None and item.key == key:
                return
            heapq.heappop(members)
