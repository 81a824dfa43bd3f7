"""Every write lands when the API server throttles and fails a share of requests.

The operator talks to kube-apiserver through :class:`FaultProxy`, which
answers 10 % of requests with 429 (``Retry-After: 1``), 5 % with 503 and
drops the connection after forwarding another 3 % (the write happened, the
answer is lost). 20 Jobs queue for a 5-cpu ClusterQueue: all of them must run
exactly once, never more than the quota at a time, and the queue's usage
must end at zero.
"""

from __future__ import annotations

import time

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.faultproxy import FaultProxy
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import Installation, OperatorProcess

JOBS = 20
QUOTA = 5


def test_every_write_lands_through_throttling_and_failures(
        control_plane: ControlPlane, kube: Kube, namespace: str, installation: Installation,
        tmp_path) -> None:
    pool = f"{namespace}-pool"
    control_plane.add_nodes(node(f"{namespace}-n1", cpu="8", labels={"pool": pool}))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}),
               b.cluster_queue(cq, quotas={rf: {"cpu": QUOTA}}),
               b.local_queue("main", cq, namespace))
    cert, key = control_plane.ca.serving("fault-proxy", directory=tmp_path / "proxy")
    with FaultProxy(control_plane.url, ca=control_plane.ca.cert, cert=cert, key=key,
                    rates={"429": 0.10, "503": 0.05, "lost": 0.03}, seed=11) as proxy, \
            OperatorProcess(installation, tmp_path, api_url=proxy.url) as operator:
        for i in range(JOBS):
            kube.create(b.job(f"j{i:02d}", namespace, cpu="1", run_for="2s"))
        peak, deadline = 0, time.monotonic() + 240
        while True:
            peak = max(peak, b.running_cpu(kube, namespace))
            done = sum(1 for j in kube.list("batch/v1", "Job", namespace) if b.job_finished(j))
            if done == JOBS:
                break
            assert time.monotonic() < deadline, (
                f"{done} of {JOBS} Jobs finished; proxy {proxy.snapshot()}\n{operator.tail(80)}")
            time.sleep(0.3)
        kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq))
                      .get((rf, "cpu")) == "0", what="the queue's usage back to zero")
        counts = proxy.snapshot()

    assert counts.get("429", 0) >= 5 and counts.get("503", 0) >= 2, counts
    assert peak <= QUOTA, f"{peak} cpu ran at once on a {QUOTA}-cpu queue"
    assert b.event_counts(kube, namespace, "Started", "Job") == \
        {f"j{i:02d}": 1 for i in range(JOBS)}
    assert len(kube.list(b.API, "Workload", namespace)) == JOBS
