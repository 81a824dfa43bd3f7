"""An operator killed mid-stream admits nothing twice.

50 one-cpu Jobs queue for a 10-cpu ClusterQueue; the operator is killed
(SIGKILL: no clean shutdown) while some are pending and some running, and
started again. The new process rebuilds its cache from the Workloads on the
API server. Judged from outside: at no sample do the running pods use more
than the quota, every Job runs exactly once (one pod, one ``Started`` event,
its Workload admitted once and never evicted), and once all are done the
queue's usage is back to zero.
"""

from __future__ import annotations

import time

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

JOBS = 50
QUOTA = 10


def test_a_killed_operator_restarts_without_admitting_anything_twice(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool = f"{namespace}-pool"
    control_plane.add_nodes(*(node(f"{namespace}-n{i}", cpu="8", labels={"pool": pool})
                              for i in (1, 2)))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}),
               b.cluster_queue(cq, quotas={rf: {"cpu": QUOTA}}),
               b.local_queue("main", cq, namespace))
    for i in range(JOBS):
        kube.create(b.job(f"j{i:02d}", namespace, cpu="1", run_for="3s"))

    peak = 0

    def finished() -> int:
        return sum(1 for j in kube.list("batch/v1", "Job", namespace) if b.job_finished(j))

    def sample() -> None:
        nonlocal peak
        peak = max(peak, b.running_cpu(kube, namespace))

    # Kill it once some Jobs run and most still wait.
    deadline = time.monotonic() + 60
    while b.running_cpu(kube, namespace) < QUOTA // 2 and time.monotonic() < deadline:
        sample()
        time.sleep(0.2)
    operator.restart(kill=True)

    deadline = time.monotonic() + 240
    while finished() < JOBS:
        sample()
        assert time.monotonic() < deadline, (
            f"only {finished()} of {JOBS} Jobs finished\n{operator.tail(80)}")
        time.sleep(0.3)

    assert peak <= QUOTA, f"{peak} cpu ran at once on a {QUOTA}-cpu queue"
    jobs = kube.list("batch/v1", "Job", namespace)
    assert {b.job_finished(j) for j in jobs} == {"Complete"}
    assert all((j.get("status") or {}).get("succeeded") == 1 and
               not (j.get("status") or {}).get("failed") for j in jobs)
    started = b.event_counts(kube, namespace, "Started", "Job")
    assert started == {f"j{i:02d}": 1 for i in range(JOBS)}, started
    workloads = kube.list(b.API, "Workload", namespace)
    assert len(workloads) == JOBS
    assert not [w["metadata"]["name"] for w in workloads
                if b.is_true(w, "Evicted") or b.is_true(w, "Preempted")]
    kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq)).get((rf, "cpu"))
                  == "0", what="the queue's usage back to zero")
