"""Redis mode honours a Workload's maximumExecutionTimeSeconds and preemptionGates: the
engine keeps both, whichever store drives it."""

from __future__ import annotations

from typing import Any

import pytest
from harness import CQ, local_cluster, node, queues, wait_for

from quota import api
from quota.lifecycle import State

pytestmark = pytest.mark.redis
API = "kuota.dev/v1alpha1"


def workload(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "main", "command": command,
                                         "resources": {"requests": {"cpu": "1"}}}]}}
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "lq-cq", "podSets": [{"name": "main", "count": 1,
                                                        "template": template}], **spec}}


def test_a_workload_admitted_for_its_maximum_is_deactivated(redis_server_url: str,
                                                            redis_prefix: str) -> None:
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))
        run = client.submit(workload=workload("capped", ["sleep", "60"],
                                              maximumExecutionTimeSeconds=1))
        record = wait_for("the workload to be deactivated",
                          lambda: (r := run.record()).state is State.INACTIVE and r, timeout=30)
    assert record.reason == "MaximumExecutionTimeExceeded"
    assert record.message == "exceeding the maximum execution time"


def test_refused_kueue_fields_are_refused_by_apply(redis_server_url: str,
                                                  redis_prefix: str) -> None:
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")]) as cluster:
        client = cluster.client()
        lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": "lq", "namespace": "default"},
              "spec": {"clusterQueue": "cq", "fairSharing": {"weight": 2}}}
        with pytest.raises(api.ObjectError) as caught:
            client.apply([lq])
    assert [p.field for p in caught.value.problems] == ["spec.fairSharing"]
    assert "does not implement admission fair sharing" in caught.value.problems[0].message
