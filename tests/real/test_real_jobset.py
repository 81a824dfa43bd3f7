"""JobSets under quota, with JobSet's own controller (sigs.k8s.io/jobset v0.10.1).

Starting from JobSet's ``paralleljobs`` example with only the queue label
added (tests/real/test_real_peer_controllers.py has the builder):

* created suspended by kuota's webhook; its Workload has one pod set per
  replicated Job, named and counted as Kueue builds them;
* admitted: each role's pod template gets the flavor's node labels, JobSet
  makes its Jobs, their pods bind to nodes of that flavor and succeed; the
  Workload finishes and the quota is given back;
* preempted by a higher-priority Job: suspended, its pods gone (the quota
  held until they are), its templates restored, then admitted again once
  the preemptor is done;
* a gang that does not fit runs nothing; deleting a JobSet deletes its
  Workload.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess
from tests.real.test_real_peer_controllers import (
    JOBSET_API,
    JOBSET_NAME_LABEL,
    paralleljobs,
)

Body = dict[str, Any]


def queued(name: str, namespace: str, *, workers: int = 1, run_for: str = "2s",
           cpu: str = "500m", priority_class: str | None = None) -> Body:
    body = paralleljobs(name, namespace, workers=workers, run_for=run_for, cpu=cpu)
    labels = {"kueue.x-k8s.io/queue-name": "main"}
    if priority_class:
        labels["kuota.dev/priority-class"] = priority_class
    body["metadata"]["labels"] = labels
    return body


def pods_of(kube: Kube, namespace: str, name: str) -> list[Body]:
    return kube.list("v1", "Pod", namespace, label_selector=f"{JOBSET_NAME_LABEL}={name}")


def selectors(jobset: Body) -> list[Body | None]:
    return [r["template"]["spec"]["template"]["spec"].get("nodeSelector")
            for r in jobset["spec"]["replicatedJobs"]]


def test_a_jobset_is_queued_admitted_with_its_flavor_and_finished(
        control_plane: ControlPlane, jobset_controller: PeerController, kube: Kube,
        namespace: str, operator: OperatorProcess) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 4})
    created = kube.create(queued("train", namespace, workers=1))
    assert created["spec"]["suspend"] is True

    workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "JobSet", "train"),
                             what="the JobSet's Workload")
    assert workload["metadata"]["name"].startswith("jobset-train-")
    assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == \
        [("workers", 4), ("driver", 1)]
    assert workload["metadata"]["labels"]["kuota.dev/owner-kind"] == "JobSet"

    def completed() -> Body | None:
        jobset = kube.get(JOBSET_API, "JobSet", "train", namespace)
        return jobset if b.is_true(jobset, "Completed") else None

    jobset = kube.wait_for(completed, what="the JobSet admitted and completed", timeout=120)
    assert selectors(jobset) == [{"pool": pool}, {"pool": pool}]
    pods = pods_of(kube, namespace, "train")
    assert len(pods) == 5 and {p["spec"]["nodeName"] for p in pods} == {f"{namespace}-n1"}
    kube.wait_for(lambda: b.is_true(b.owned_workload(kube, namespace, "JobSet", "train"),
                                    "Finished"), what="its Workload to finish")
    kube.wait_for(lambda: b.queue_usage(kube.get(b.API, "ClusterQueue", f"{namespace}-cq"))
                  .get((f"{namespace}-rf", "cpu"), "0") == "0", what="the quota given back")


def test_a_preempted_jobset_is_stopped_restored_and_admitted_again(
        control_plane: ControlPlane, jobset_controller: PeerController, kube: Kube,
        namespace: str, operator: OperatorProcess) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 3})
    kube.create(queued("low", namespace, workers=1, run_for="1h"))  # 5 pods of 500m

    def running(name: str, count: int) -> list[Body] | None:
        pods = [p for p in pods_of(kube, namespace, name)
                if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
        return pods if len(pods) == count else None

    kube.wait_for(lambda: running("low", 5), what="the low JobSet running", timeout=90)
    kube.create(b.job("high", namespace, cpu="2", run_for="3s",
                      priority_class=f"{namespace}-high"))

    def stopped() -> Body | None:
        jobset = kube.get(JOBSET_API, "JobSet", "low", namespace)
        return jobset if jobset["spec"].get("suspend") is True \
            and selectors(jobset) == [None, None] else None

    kube.wait_for(stopped, what="the low JobSet suspended and its templates restored")
    assert b.is_true(b.owned_workload(kube, namespace, "JobSet", "low"), "Evicted") or \
        not b.is_true(b.owned_workload(kube, namespace, "JobSet", "low"), "QuotaReserved")
    kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                  what="the preemptor to run once the JobSet's pods are gone", timeout=90)
    jobset = kube.wait_for(lambda: (j := kube.get(JOBSET_API, "JobSet", "low", namespace))
                           and j["spec"].get("suspend") is False and j,
                           what="the low JobSet admitted again")
    assert selectors(jobset) == [{"pool": pool}, {"pool": pool}]
    kube.wait_for(lambda: running("low", 5), what="the low JobSet running again", timeout=90)


def test_a_jobset_that_does_not_fit_runs_nothing_and_deleting_it_deletes_its_workload(
        control_plane: ControlPlane, jobset_controller: PeerController, kube: Kube,
        namespace: str, operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 2})
    kube.create(queued("big", namespace, workers=2, cpu="1"))  # 9 cpu asked, 2 in quota
    workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "JobSet", "big"),
                             what="the big JobSet's Workload")
    kube.wait_for(lambda: (w := b.owned_workload(kube, namespace, "JobSet", "big"))
                  and (w.get("status") or {}).get("conditions"), what="a pending reason")
    assert not pods_of(kube, namespace, "big")
    assert kube.get(JOBSET_API, "JobSet", "big", namespace)["spec"]["suspend"] is True
    kube.delete(JOBSET_API, "JobSet", "big", namespace)
    kube.wait_for(lambda: kube.find(b.API, "Workload", workload["metadata"]["name"],
                                    namespace) is None, what="its Workload deleted")
