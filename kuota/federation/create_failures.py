"""When a member keeps failing to create a workload's copy: back off, then give up on it (pure).

A create task already retries a failed call a few times with a short backoff
(:mod:`.tasks`); a create that fails after all of them — the member is down
for longer, or it refuses this Job (admission webhook, quota, policy, an
invalid field on that cluster) — used to be submitted again on the next
tick, forever. :class:`CreateFailures` keeps, per (workload, member), how
often the create failed and when it may be tried again:

* after the *n*-th failure the next try waits ``backoff × 2^(n-1)`` seconds
  (capped at :data:`MAX_BACKOFF`), so a member refusing many workloads is
  not hammered;
* the ``attempts``-th failure is a :class:`Refusal`: the member counts as
  refusing this workload. The federation then evicts the workload with
  reason :data:`REFUSED` and the last error in the message (the Workload's
  ``Evicted`` condition and Event show it) and excludes the member from the
  workload's later decisions (:meth:`multicluster.controller.Dispatcher.exclude`),
  so admission sends it to another member — or keeps it Pending, with the
  exclusion in the decision, if no other fits;
* a success forgets the pair's failures; a finished workload forgets all.

Values in, values out: ``now`` is passed in, nothing is read or written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Eviction reason of a workload whose member refused its copy.
REFUSED: Final = "MemberRefused"
#: Longest pause between two creates of one copy, seconds.
MAX_BACKOFF: Final = 300.0


@dataclass(frozen=True, slots=True)
class Refusal:
    """A member failed to create a workload's copy ``failures`` times: give up on it there."""

    workload: str
    member: str
    failures: int
    error: str

    @property
    def message(self) -> str:
        return (f"member cluster {self.member} failed to create the copy of workload "
                f"{self.workload} {self.failures} times; last error: {self.error or 'unknown'}")


@dataclass(slots=True)
class _Failed:
    count: int
    retry_at: float
    error: str


class CreateFailures:
    """Failed creates per (workload, member): when to try again, and when to give up."""

    def __init__(self, *, backoff: float, attempts: int) -> None:
        if backoff < 0:
            raise ValueError(f"create backoff must be >= 0 seconds, not {backoff}")
        if attempts < 1:
            raise ValueError(f"create attempts must be >= 1, not {attempts}")
        self.backoff = backoff
        self.attempts = attempts
        self._failed: dict[tuple[str, str], _Failed] = {}

    def delay(self, failures: int) -> float:
        """The pause after the ``failures``-th failure in a row."""
        return float(min(MAX_BACKOFF, self.backoff * 2 ** max(0, failures - 1)))

    def may_try(self, workload: str, member: str, now: float) -> bool:
        found = self._failed.get((workload, member))
        return found is None or now >= found.retry_at

    def failures(self, workload: str, member: str) -> int:
        found = self._failed.get((workload, member))
        return 0 if found is None else found.count

    def failed(self, workload: str, member: str, error: str, now: float) -> Refusal | None:
        """One more failed create at ``now``; a :class:`Refusal` when it is the last allowed
        (the pair is then forgotten: the workload leaves the member)."""
        pair = (workload, member)
        found = self._failed.get(pair)
        count = 1 if found is None else found.count + 1
        if count >= self.attempts:
            self._failed.pop(pair, None)
            return Refusal(workload, member, count, error)
        self._failed[pair] = _Failed(count, now + self.delay(count), error)
        return None

    def succeeded(self, workload: str, member: str) -> None:
        self._failed.pop((workload, member), None)

    def forget(self, workload: str) -> None:
        """The workload finished or is gone: drop its failures on every member."""
        for pair in [p for p in self._failed if p[0] == workload]:
            del self._failed[pair]
