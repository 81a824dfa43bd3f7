"""What happened to workloads: the engine's outbox.

Every change the engine makes to a workload's lifecycle is also appended to
an outbox as a :class:`WorkloadEvent`. Adapters drain it and apply each event
to their store (patch a Workload's status, suspend a Job, stop pods on rq
workers); the simulator turns it into its timeline. Events are values: the
outbox can be replayed, logged and tested.
"""

from __future__ import annotations

import enum

from quota.values import value
from quota.workload import Admission


class Kind(enum.StrEnum):
    QUOTA_RESERVED = "QuotaReserved"  # quota held, admission checks pending
    ADMITTED = "Admitted"
    #: Evicted (or deactivated) while its pods run: it keeps its quota until the adapter
    #: reports them gone (engines with ``wait_for_stop``); EVICTED or DEACTIVATED follows.
    EVICTING = "Evicting"
    EVICTED = "Evicted"  # quota released; the workload waits again (or is deactivated)
    REQUEUED = "Requeued"  # back in its queue after a backoff
    DEACTIVATED = "Deactivated"
    FINISHED = "Finished"


@value
class WorkloadEvent:
    at: float
    key: str
    kind: Kind
    #: Kueue's condition reason, e.g. Preempted, PodsReadyTimeout, AdmissionCheck.
    reason: str = ""
    #: The finer reason, e.g. InClusterQueue or InCohortReclamation for Preempted.
    detail: str = ""
    message: str = ""
    admission: Admission | None = None
    #: Seconds admitted in ended admissions, for a workload with a maximum execution time
    #: (its ``status.accumulatedPastExecutionTimeSeconds``), on the events that end one.
    executed: float | None = None
