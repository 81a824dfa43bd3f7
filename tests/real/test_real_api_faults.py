"""Every write lands when the API server throttles and fails a share of requests.

The operator talks to kube-apiserver through :class:`tests.faultproxy.FaultProxy`
(the fast tier's fault rules in front of a real server), which answers 10 %
of requests with 429 (``Retry-After: 1``) and 5 % with 503, and loses the
answer of 3 % of writes after the server carried them out. 20 Jobs queue
for a 5-cpu ClusterQueue: all of them must run exactly once, never more than
the quota at a time, and the queue's usage must end at zero.
"""

from __future__ import annotations

import ssl
import time

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.emulator.faults import ALL_VERBS, WRITE_VERBS
from tests.faultproxy import FaultProxy
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
    upstream = ssl.create_default_context(cafile=str(control_plane.ca.cert))
    with FaultProxy(control_plane.url, upstream_ssl=upstream, seed=11) as proxy:
        throttled = proxy.faults.fail(status=429, retry_after=1, rate=0.10, times=None,
                                      verbs=ALL_VERBS)
        unavailable = proxy.faults.fail(status=503, rate=0.05, times=None, verbs=ALL_VERBS)
        lost = proxy.faults.fail(status=503, rate=0.03, times=None, verbs=WRITE_VERBS,
                                 after=True)
        with OperatorProcess(installation, tmp_path, api_url=proxy.url) as operator:
            run_jobs(kube, namespace, operator, cq, rf)
        hits = {"429": throttled.hits, "503": unavailable.hits, "lost": lost.hits}

    assert hits["429"] >= 5 and hits["503"] >= 2 and hits["lost"] >= 1, hits
    # Once each (Events are best effort: a lost one is not retried, so they are not counted).
    jobs = kube.list("batch/v1", "Job", namespace)
    assert sorted((j["status"].get("succeeded"), j["status"].get("failed")) for j in jobs) == \
        [(1, None)] * JOBS
    workloads = kube.list(b.API, "Workload", namespace)
    assert len(workloads) == JOBS
    assert not [w["metadata"]["name"] for w in workloads if b.is_true(w, "Evicted")]


def run_jobs(kube: Kube, namespace: str, operator: OperatorProcess, cq: str, rf: str) -> None:
    """Submit the Jobs and wait for all to finish, never above the quota at a sample."""
    for i in range(JOBS):
        kube.create(b.job(f"j{i:02d}", namespace, cpu="1", run_for="2s"))
    peak, deadline = 0, time.monotonic() + 240
    while True:
        peak = max(peak, b.running_cpu(kube, namespace))
        done = sum(1 for j in kube.list("batch/v1", "Job", namespace) if b.job_finished(j))
        if done == JOBS:
            break
        assert time.monotonic() < deadline, (
            f"{done} of {JOBS} Jobs finished\n{operator.tail(80)}")
        time.sleep(0.3)
    assert peak <= QUOTA, f"{peak} cpu ran at once on a {QUOTA}-cpu queue"
    kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq))
                  .get((rf, "cpu")) == "0", what="the queue's usage back to zero")
