"""Maximum execution time: how long each workload has been admitted, over all its admissions.

Kueue's ``spec.maximumExecutionTimeSeconds`` caps the time a workload may
spend admitted, in total: each admission adds the time from its start to its
end (an eviction, a deactivation, the finish) to what earlier admissions
used (``status.accumulatedPastExecutionTimeSeconds``). Once the sum reaches
the maximum, the workload is deactivated with reason
``MaximumExecutionTimeExceeded`` and the count starts over (Kueue clears the
accumulated time), so a user who activates it again gives it its full time
again.

:class:`ExecutionTimes` is the engine's clock-free bookkeeping: the engine
says when an admission starts and stops, and asks which workloads are due
at ``now`` and when the next one will be (:meth:`Engine.next_wakeup`). Only
workloads with a maximum are followed; others cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from quota.workload import WorkloadInfo

#: The deactivation reason and message, as Kueue writes them (its Evicted condition reads
#: ``DeactivatedDueToMaximumExecutionTimeExceeded``, "The workload is deactivated due to
#: exceeding the maximum execution time").
REASON: Final = "MaximumExecutionTimeExceeded"
MESSAGE: Final = "exceeding the maximum execution time"


@dataclass(slots=True)
class ExecutionTimes:
    #: Workload key -> seconds admitted in earlier admissions (only those with a maximum).
    _past: dict[str, float] = field(default_factory=dict)
    #: Admitted now: workload key -> (since, when its maximum is reached).
    _running: dict[str, tuple[float, float]] = field(default_factory=dict)

    def started(self, info: WorkloadInfo, now: float) -> None:
        """``info`` was admitted at ``now``."""
        if info.max_execution is None:
            return
        past = self._past.setdefault(info.key, info.past_execution)
        self._running[info.key] = (now, now + info.max_execution - past)

    def changed(self, info: WorkloadInfo) -> None:
        """``info``'s maximum changed: an admission running goes on against the new one."""
        running = self._running.pop(info.key, None)
        if running is not None and info.max_execution is not None:
            self._running[info.key] = (running[0], running[0] + info.max_execution
                                       - self._past.get(info.key, 0.0))

    def stopped(self, key: str, now: float) -> None:
        """The admission of ``key`` ended at ``now`` (nothing if it was not running)."""
        running = self._running.pop(key, None)
        if running is not None:
            self._past[key] = self._past.get(key, 0.0) + max(0.0, now - running[0])

    def reset(self, key: str) -> None:
        """Start the count over (after a deactivation for exceeding the maximum)."""
        self._running.pop(key, None)
        if key in self._past:
            self._past[key] = 0.0

    def forget(self, key: str) -> None:
        """The workload ended: nothing more to count."""
        self._running.pop(key, None)
        self._past.pop(key, None)

    def past(self, key: str) -> float | None:
        """Seconds admitted in ended admissions, for a workload with a maximum."""
        return self._past.get(key)

    def due(self, now: float) -> list[str]:
        """Workloads admitted now whose maximum is reached at ``now``."""
        return [key for key, (_, deadline) in self._running.items() if now >= deadline]

    def next_deadline(self) -> float | None:
        return min((deadline for _, deadline in self._running.values()), default=None)
