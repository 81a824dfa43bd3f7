"""Whole gangs and reclaim on a real cluster.

* a pod group is admitted whole: every pod is ungated together and runs;
* a gang that does not fit starts no pod at all (the Job controller never
  creates one, because the Job stays suspended);
* reclaim: a Job borrowing its cohort's quota is preempted when the lender
  needs it back, stopped and restored (its pods gone, ``startTime`` cleared,
  its template put back), re-admitted on another flavor, and runs there to
  completion — on both Kubernetes versions, whose Job controllers differ in
  whether they clear ``startTime`` on suspend.
"""

from __future__ import annotations

import time

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess


def group_pod(name: str, namespace: str, group: str, total: int, *, cpu: str = "1",
              run_for: str = "3s") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kuota.dev/pod-group-name": group,
                                    "kuota.dev/queue-name": "main"},
                         "annotations": {"kuota.dev/pod-group-total-count": str(total),
                                         "kuota.dev/test-run-for": run_for}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "registry.example/fake:1",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


class TestGangs:
    def test_a_pod_group_is_admitted_whole_and_a_gang_that_does_not_fit_starts_nothing(
            self, control_plane: ControlPlane, kube: Kube, namespace: str,
            operator: OperatorProcess) -> None:
        pool = f"{namespace}-pool"
        control_plane.add_nodes(*(node(f"{namespace}-n{i}", cpu="4", labels={"pool": pool})
                                  for i in (1, 2)))
        rf, cq = f"{namespace}-rf", f"{namespace}-cq"
        kube.apply(b.flavor(rf, labels={"pool": pool}),
                   b.cluster_queue(cq, quotas={rf: {"cpu": 6}}),
                   b.local_queue("main", cq, namespace))

        for i in range(3):
            created = kube.create(group_pod(f"g-{i}", namespace, "g", 3, cpu="2"))
            gates = [g["name"] for g in created["spec"].get("scheduling_gates") or
                     created["spec"].get("schedulingGates") or []]
            assert "kuota.dev/admission" in gates, created["spec"]

        def all_bound() -> list[dict] | None:
            pods = kube.list("v1", "Pod", namespace, label_selector="kuota.dev/pod-group-name=g")
            return pods if len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods) \
                else None

        pods = kube.wait_for(all_bound, what="the whole group to be ungated and bound")
        assert all(p["spec"]["nodeSelector"] == {"pool": pool} for p in pods)
        kube.wait_for(lambda: b.is_true(kube.find(b.API, "Workload", "group-g", namespace),
                                        "Finished"), what="the group's Workload to finish")

        # 4 pods x 2 cpu = 8 cpu: more than the queue's 6, so none of it may start.
        kube.create(b.job("big", namespace, cpu="2", parallelism=4))
        wl = kube.wait_for(lambda: b.workload_of(kube.list(b.API, "Workload", namespace), "big"),
                           what="the big Job's Workload")
        time.sleep(3)  # time enough for a wrong start to show
        job = kube.get("batch/v1", "Job", "big", namespace)
        assert job["spec"]["suspend"] is True
        assert kube.list("v1", "Pod", namespace, label_selector="job-name=big") == []
        wl = kube.get(b.API, "Workload", wl["metadata"]["name"], namespace)
        assert not b.is_true(wl, "QuotaReserved")


class TestReclaim:
    def test_a_preempted_borrower_is_restored_readmitted_on_another_flavor_and_completes(
            self, control_plane: ControlPlane, kube: Kube, namespace: str,
            operator: OperatorProcess) -> None:
        od, spot = f"{namespace}-od", f"{namespace}-spot"
        control_plane.add_nodes(node(f"{namespace}-od1", cpu="4", labels={"pool": od}),
                                node(f"{namespace}-spot1", cpu="4", labels={"pool": spot}))
        cohort, lender, borrower = f"{namespace}-co", f"{namespace}-a", f"{namespace}-b"
        kube.apply(b.flavor(od, labels={"pool": od}), b.flavor(spot, labels={"pool": spot}),
                   b.cluster_queue(lender, quotas={od: {"cpu": 4}}, cohort=cohort,
                                   preemption={"reclaimWithinCohort": "Any"}),
                   b.cluster_queue(borrower, quotas={od: {"cpu": 0}, spot: {"cpu": 4}},
                                   cohort=cohort),
                   b.local_queue("lender", lender, namespace),
                   b.local_queue("borrower", borrower, namespace))

        # The borrower takes the lender's idle on-demand quota and runs there.
        kube.create(b.job("borrows", namespace, queue="borrower", cpu="4", run_for="12s"))

        def pods_on(job_name: str, pool: str) -> list[dict] | None:
            pods = [p for p in kube.list("v1", "Pod", namespace,
                                         label_selector=f"job-name={job_name}")
                    if p["spec"].get("nodeName", "").startswith(pool)
                    and p["metadata"].get("deletionTimestamp") is None]
            return pods or None

        kube.wait_for(lambda: pods_on("borrows", f"{namespace}-od"),
                      what="the borrower's pod on the on-demand node")

        # The lender wants its quota back: the borrower is preempted.
        kube.create(b.job("owns", namespace, queue="lender", cpu="4", run_for="3s"))

        def evicted() -> dict | None:
            wl = b.workload_of(kube.list(b.API, "Workload", namespace), "borrows")
            found = b.condition(wl, "Evicted") or b.condition(wl, "Preempted")
            return found if found and found.get("status") == "True" else None

        kube.wait_for(evicted, what="the borrower to be preempted", timeout=30)

        # Re-admitted on spot, it runs there to the end; the lender runs on on-demand.
        kube.wait_for(lambda: pods_on("borrows", f"{namespace}-spot"),
                      what="the borrower's pod on the spot node", timeout=60)
        job = kube.get("batch/v1", "Job", "borrows", namespace)
        assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": spot}
        assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "owns",
                                                             namespace)),
                             what="the lender's Job to finish") == "Complete"
        assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "borrows",
                                                             namespace)),
                             what="the borrower's Job to finish", timeout=60) == "Complete"
        wl = b.workload_of(kube.list(b.API, "Workload", namespace), "borrows")
        assert wl is not None
        assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": spot}
