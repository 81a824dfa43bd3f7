"""Deleting a Job releases its quota, however it is deleted.

A Workload is owned by its Job, but the garbage collector only removes it
for background and foreground deletion. The Python client's
``delete_namespaced_job`` without a body takes the server's default for
``batch/v1`` Jobs, which *orphans* dependents (kubectl picks background
itself). Foreground deletion removes dependents first while the Job still
exists, with a ``deletionTimestamp``. In every case the Workload must go, the
quota must come back and nothing may be recreated for the dying Job.
"""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

CASES = [
    {"id": "python-client-default", "propagation": None},
    {"id": "background", "propagation": "Background"},
    {"id": "foreground", "propagation": "Foreground"},
    {"id": "orphan", "propagation": "Orphan"},
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_deleting_a_running_job_removes_its_workload_and_releases_quota(
        case: dict, control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool = f"{namespace}-pool"
    # 8 cpu: an orphaned pod may outlive its Job, the next Job still fits beside it.
    control_plane.add_nodes(node(f"{namespace}-n1", cpu="8", labels={"pool": pool}))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}),
               b.cluster_queue(cq, quotas={rf: {"cpu": 4}}),
               b.local_queue("main", cq, namespace))
    kube.create(b.job("doomed", namespace, cpu="3", run_for="1h"))
    wl = kube.wait_for(lambda: b.workload_of(kube.list(b.API, "Workload", namespace), "doomed"),
                       what="the Workload")
    kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq)).get((rf, "cpu"))
                  == "3", what="the Job's quota in use")

    batch = k8s.BatchV1Api(kube.api_client)
    if case["propagation"] is None:
        batch.delete_namespaced_job("doomed", namespace)
    else:
        batch.delete_namespaced_job("doomed", namespace, propagation_policy=case["propagation"])

    kube.wait_for(lambda: kube.find(b.API, "Workload", wl["metadata"]["name"], namespace) is None,
                  what="the Workload to be deleted", timeout=30)
    kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq)).get((rf, "cpu"))
                  == "0", what="the quota to be released", timeout=30)
    time.sleep(3)  # a wrongly recreated Workload shows up within a sync or two
    assert kube.list(b.API, "Workload", namespace) == []

    # The freed quota admits the next Job.
    kube.create(b.job("next", namespace, cpu="4", run_for="1s"))
    assert kube.wait_for(lambda: b.job_finished(kube.find("batch/v1", "Job", "next", namespace)),
                         what="the next Job to run", timeout=60) == "Complete"
