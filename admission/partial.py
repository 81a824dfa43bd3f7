"""Partial admission: the largest pod counts that fit, never below ``minCount``.

Only pod sets with a ``minCount`` shrink. A single step ``k`` from 0 (full
counts) to ``D`` (every such pod set at its minCount, where ``D`` is the
largest ``count - minCount``) shrinks every pod set in proportion to its own
slack, so they shrink together. Usage falls as ``k`` grows, so whether the
workload fits is monotone in ``k`` and a binary search finds the smallest
``k`` that fits — the largest workload — in O(log D) tries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from quota.workload import WorkloadInfo

T = TypeVar("T")


def can_shrink(info: WorkloadInfo) -> bool:
    return any(ps.min_count is not None and ps.min_count < ps.count for ps in info.pod_sets)


def counts_at(info: WorkloadInfo, step: int, steps: int) -> dict[str, int]:
    counts = {}
    for ps in info.pod_sets:
        slack = ps.count - ps.min_count if ps.min_count is not None else 0
        # Round the reduction up so the last step reaches minCount exactly.
        counts[ps.name] = ps.count - (slack * step + steps - 1) // steps if slack else ps.count
    return counts


def search(info: WorkloadInfo, attempt: Callable[[dict[str, int]], T | None]) -> T | None:
    """The result of ``attempt`` for the largest counts it accepts, or None."""
    steps = max((ps.count - ps.min_count for ps in info.pod_sets
                 if ps.min_count is not None), default=0)
    if steps <= 0:
        return None
    best = attempt(counts_at(info, steps, steps))
    if best is None:
        return None
    low, high = 1, steps  # full counts (step 0) were already tried by the caller
    while low < high:
        mid = (low + high) // 2
        result = attempt(counts_at(info, mid, steps))
        if result is not None:
            best, high = result, mid
        else:
            low = mid + 1
    return best
