"""Pods take time to die, and some pods can never take their admission.

* A preempted pod group's pods are deleted once and terminate for a while
  (``kuota.dev/test-terminate-for``): its quota stays held until they are
  gone, so the preemptor never runs beside them, and each pod gets one
  ``Stopped`` Event, not one per sync.
* A gated group pod whose nodeSelector already names the flavor's label with
  another value can never be started (a gated pod's nodeSelector may only
  gain keys): its Workload is deactivated with a ``NodeSelectorConflict``
  Event, instead of the pod staying gated forever.
"""

from __future__ import annotations

import time

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess
from tests.real.test_real_admission import group_pod


def _reserved(kube: Kube, cq: str, rf: str) -> str | None:
    return b.queue_usage(kube.find(b.API, "ClusterQueue", cq),
                         "flavorsReservation").get((rf, "cpu"))


def test_a_preempted_groups_quota_is_held_until_its_terminating_pods_are_gone(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 4})
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    for i in range(2):
        pod = group_pod(f"low-{i}", namespace, "low", 2, cpu="2", run_for="1h")
        pod["metadata"]["annotations"]["kuota.dev/test-terminate-for"] = "8s"
        kube.create(pod)
    kube.wait_for(lambda: len([p for p in kube.list("v1", "Pod", namespace,
                                                     label_selector="kuota.dev/pod-group-name=low")
                               if (p.get("status") or {}).get("phase") == "Running"]) == 2,
                  what="the low group running")
    # The ClusterQueue's status is written every --status-interval: a run fast enough
    # could otherwise read one written before the group's admission (0) below.
    kube.wait_for(lambda: _reserved(kube, cq, rf) == "4",
                  what="the group's reservation in the ClusterQueue's status")

    kube.create(b.job("high", namespace, cpu="4", run_for="2s",
                      priority_class=f"{namespace}-high"))

    def terminating() -> list[dict]:
        """Deleted pods whose containers still run (an ended pod holds nothing, even before
        the kubelet removes it)."""
        return [p for p in kube.list("v1", "Pod", namespace,
                                     label_selector="kuota.dev/pod-group-name=low")
                if p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") in ("Pending", "Running")]

    kube.wait_for(lambda: len(terminating()) == 2, what="the low group's pods terminating")
    # While they terminate (8 s), their quota is held: the preemptor waits.
    while terminating():
        high = b.workload_of(kube.list(b.API, "Workload", namespace), "high")
        suspended = kube.get("batch/v1", "Job", "high", namespace)["spec"]["suspend"]
        reserved = _reserved(kube, cq, rf)
        # Still terminating after the reads, so they were while the reads were made (a pod
        # that ended does not come back); otherwise what was read may be from just after.
        if not terminating():
            break
        assert not b.is_true(high, "QuotaReserved"), "admitted beside terminating pods"
        assert suspended is True
        # (What the Workloads said then, should the reservation ever read wrong again: one
        # run in many read "0" here, a status written before the group's admission, until
        # the test waited for the status to show it.)
        assert reserved in ("4", None), [
            ((w.get("metadata") or {}).get("name"), (w.get("status") or {}).get("conditions"))
            for w in kube.list(b.API, "Workload", namespace)]
        time.sleep(0.5)
    assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                         what="the preemptor to run once they are gone") == "Complete"
    stopped = b.event_counts(kube, namespace, "Stopped", "Pod")
    assert stopped == {"low-0": 1, "low-1": 1}, stopped


def test_a_pod_that_can_never_take_its_domain_deactivates_its_workload(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool, rack = f"{namespace}-tas", "kuota.dev/test-rack"
    control_plane.add_nodes(
        node(f"{namespace}-r1", cpu="2", labels={"pool": pool, rack: "r1"}),
        node(f"{namespace}-r2", cpu="8", labels={"pool": pool, rack: "r2"}))
    topo, rf, cq = f"{namespace}-topo", f"{namespace}-rf", f"{namespace}-cq"
    kube.apply({"apiVersion": b.API, "kind": "Topology", "metadata": {"name": topo},
                "spec": {"levels": [{"nodeLabel": rack},
                                    {"nodeLabel": "kubernetes.io/hostname"}]}})
    flavor = b.flavor(rf, labels={"pool": pool})
    flavor["spec"]["topologyName"] = topo
    kube.apply(flavor, b.cluster_queue(cq, quotas={rf: {"cpu": 10}}),
               b.local_queue("main", cq, namespace))
    # PodNodeSelector merges the namespace's selector into every new pod: rack r2 here,
    # while admission picks r1 (the tightest rack for 2 one-cpu pods).
    kube.patch("v1", "Namespace", namespace, {"metadata": {"annotations": {
        "scheduler.alpha.kubernetes.io/node-selector": f"{rack}=r2"}}})
    kube.create(b.job("odd", namespace, cpu="1", parallelism=2, run_for="1h",
                      pod_annotations={"kuota.dev/podset-required-topology": rack}))

    def deactivated() -> dict | None:
        wl = b.workload_of(kube.list(b.API, "Workload", namespace), "odd")
        return wl if wl and (wl.get("spec") or {}).get("active") is False else None

    kube.wait_for(deactivated, what="the Workload to be deactivated", timeout=60)

    def told() -> set[str] | None:  # (Events are posted in the background)
        conflicts = kube.list("v1", "Event", namespace,
                              field_selector="reason=NodeSelectorConflict")
        kinds = {e["involvedObject"]["kind"] for e in conflicts}
        return kinds if kinds >= {"Pod", "Workload"} else None

    kube.wait_for(told, what="NodeSelectorConflict Events for the Pod and the Workload",
                  timeout=30)
    kube.wait_for(lambda: _reserved(kube, cq, rf) in ("0", None), what="no quota held")
    for pod in kube.list("v1", "Pod", namespace, label_selector="job-name=odd"):
        assert pod["spec"]["nodeSelector"][rack] == "r2"  # never patched into a 422 loop


def test_a_preempted_group_is_not_failed_by_its_stopped_pods_and_its_replacements_run(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    """The pods kuota deletes to evict a group end ``Failed`` (the kubelet's word for a
    deleted pod): they must not finish the group's Workload as failed, which left the
    group's replacement pods gated for ever."""
    b.pool_queue(control_plane, kube, namespace, {"cpu": 4})

    def group_pods() -> list[dict]:
        return kube.list("v1", "Pod", namespace, label_selector="kuota.dev/pod-group-name=low")

    for i in range(2):
        kube.create(group_pod(f"low-{i}", namespace, "low", 2, cpu="2", run_for="1h"))
    kube.wait_for(lambda: len([p for p in group_pods()
                               if (p.get("status") or {}).get("phase") == "Running"]) == 2,
                  what="the low group running")
    kube.create(b.job("high", namespace, cpu="4", run_for="2s",
                      priority_class=f"{namespace}-high"))
    kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                  what="the preemptor to run and complete")
    kube.wait_for(lambda: not group_pods(), what="the evicted group's pods gone")
    low = kube.find(b.API, "Workload", "group-low", namespace)
    assert low is None or not b.is_true(low, "Finished"), (low.get("status") or {})

    # The group's owner (a user, a controller) creates its pods again: they run.
    for i in range(2):
        kube.create(group_pod(f"low-again-{i}", namespace, "low", 2, cpu="2", run_for="2s"))
    kube.wait_for(lambda: b.is_true(kube.find(b.API, "Workload", "group-low", namespace),
                                    "Finished"),
                  what="the replacement group's Workload to finish")
    finished = [c for c in kube.get(b.API, "Workload", "group-low", namespace)["status"]
                ["conditions"] if c["type"] == "Finished"]
    assert finished[0]["reason"] == "Succeeded", finished
    assert all((p.get("status") or {}).get("phase") == "Succeeded" for p in group_pods())
