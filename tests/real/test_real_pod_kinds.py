"""Pods, Deployments and StatefulSets with a queue label never run outside quota.

Each starts from Kueue's own sample (site/static/examples: ``kueue-pod.yaml``,
``sample-deployment.yaml``, ``sample-statefulset.yaml``) with only what the
fake kubelet reads added (how long pods run), against the real Deployment,
ReplicaSet and StatefulSet controllers of kube-controller-manager:

* a single Pod is gated, admitted as a one-pod Workload, bound to a node of
  its flavor, and its Workload finishes with it;
* a Deployment's replicas are queued one by one: those the quota holds run,
  the next waits gated with its Workload pending; deleting the Deployment
  takes their Workloads with them;
* a CronJob's Jobs are queued (their template carries the queue label);
* a StatefulSet is one gang: admitted whole (its pods made one by one as
  each is ready), and one that does not fit runs nothing — its controller
  makes no second pod while the first waits gated; resizing it is refused,
  and a pod added past its size anyway stays gated.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

Body = dict[str, Any]
GROUP_LABEL = "kuota.dev/pod-group-name"


def sample_pod(namespace: str) -> Body:
    """Kueue's kueue-pod.yaml (3 cpu, restartPolicy OnFailure)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "kueue-sleep-", "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": "main"},
                         "annotations": {"kuota.dev/test-run-for": "3s"}},
            "spec": {"containers": [{"name": "sleep", "image": "busybox",
                                     "command": ["sleep"], "args": ["3s"],
                                     "resources": {"requests": {"cpu": "3"}}}],
                     "restartPolicy": "OnFailure"}}


def sample_owner(kind: str, namespace: str, *, replicas: int = 3, cpu: str = "1") -> Body:
    """Kueue's sample-deployment.yaml / sample-statefulset.yaml, pods running long."""
    spec: Body = {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}},
                  "template": {"metadata": {"labels": {"app": "nginx"},
                                            "annotations": {"kuota.dev/test-run-for": "1h"}},
                               "spec": {"containers": [
                                   {"name": "nginx", "image": "registry.k8s.io/nginx-slim:0.27",
                                    "ports": [{"containerPort": 80}],
                                    "resources": {"requests": {"cpu": cpu}}}]}}}
    if kind == "StatefulSet":
        spec["serviceName"] = "nginx"
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "nginx", "namespace": namespace,
                         "labels": {"app": "nginx", "kueue.x-k8s.io/queue-name": "main"}},
            "spec": spec}


def pods(kube: Kube, namespace: str) -> list[Body]:
    return kube.list("v1", "Pod", namespace, label_selector="app=nginx")


def gated(pod: Body) -> bool:
    return any(g.get("name") == "kuota.dev/admission"
               for g in pod["spec"].get("schedulingGates") or [])


def running(pod: Body) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def test_a_single_pod_is_queued_admitted_and_finished(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 3}, nodes=2, node_cpu="4")
    created = kube.create(sample_pod(namespace))
    assert gated(created), created["spec"]
    name = created["metadata"]["name"]
    group = created["metadata"]["labels"][GROUP_LABEL]

    def done() -> Body | None:
        pod = kube.get("v1", "Pod", name, namespace)
        return pod if (pod.get("status") or {}).get("phase") == "Succeeded" else None

    pod = kube.wait_for(done, what="the pod to be admitted, run and succeed")
    assert pod["spec"]["nodeSelector"] == {"pool": pool}
    assert pod["spec"]["nodeName"].startswith(f"{namespace}-n")
    kube.wait_for(lambda: b.is_true(kube.find(b.API, "Workload", f"group-{group}", namespace),
                                    "Finished"), what="its Workload to finish")
    cq = kube.get(b.API, "ClusterQueue", f"{namespace}-cq")
    kube.wait_for(lambda: b.queue_usage(kube.get(b.API, "ClusterQueue", f"{namespace}-cq"))
                  .get((f"{namespace}-rf", "cpu"), "0") == "0",
                  what="the quota given back")
    assert cq is not None


def test_a_deployments_replicas_are_queued_one_by_one(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 2}, nodes=2, node_cpu="4")
    kube.create(sample_owner("Deployment", namespace))

    def two_run_one_waits() -> list[Body] | None:
        now = pods(kube, namespace)
        return now if len(now) == 3 and sum(map(running, now)) == 2 \
            and sum(map(gated, now)) == 1 else None

    now = kube.wait_for(two_run_one_waits, what="2 replicas running, the third gated")
    waiting = next(p for p in now if gated(p))
    workload = kube.find(b.API, "Workload",
                         f"group-{waiting['metadata']['labels'][GROUP_LABEL]}", namespace)
    assert workload is not None and not b.is_true(workload, "QuotaReserved")

    kube.delete("apps/v1", "Deployment", "nginx", namespace)
    kube.wait_for(lambda: not kube.list(b.API, "Workload", namespace),
                  what="the replicas' Workloads gone with them")


def test_a_statefulset_is_one_gang(control_plane: ControlPlane, kube: Kube, namespace: str,
                                   operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 3}, nodes=2, node_cpu="4")
    kube.create(sample_owner("StatefulSet", namespace))
    kube.wait_for(lambda: len([p for p in pods(kube, namespace) if running(p)]) == 3,
                  what="the three replicas running (made one by one)")
    workloads = kube.list(b.API, "Workload", namespace)
    assert [[ps["count"] for ps in w["spec"]["podSets"]] for w in workloads] == [[3]]

    # Too big for the quota: its first pod waits gated, and no second one is made.
    kube.create({**sample_owner("StatefulSet", namespace, replicas=2),
                 "metadata": {"name": "big", "namespace": namespace,
                              "labels": {"app": "big", "kueue.x-k8s.io/queue-name": "main"}},
                 "spec": {**sample_owner("StatefulSet", namespace, replicas=2)["spec"],
                          "selector": {"matchLabels": {"app": "big"}},
                          "template": {"metadata": {"labels": {"app": "big"}},
                                       "spec": sample_owner("StatefulSet", namespace)
                                       ["spec"]["template"]["spec"]}}})
    kube.wait_for(lambda: kube.find(b.API, "Workload", "group-sts-big", namespace),
                  what="the big StatefulSet's Workload")
    big = kube.list("v1", "Pod", namespace, label_selector="app=big")
    assert [p["metadata"]["name"] for p in big] == ["big-0"] and gated(big[0])

    # Resizing a queued StatefulSet is refused, as in Kueue; through the scale
    # subresource (which no webhook sees) the pod it adds stays gated: never outside quota.
    refused = control_plane.kubectl("patch", "statefulset/nginx", "-n", namespace,
                                    "--type=merge", "-p", '{"spec": {"replicas": 4}}',
                                    check=False)
    assert refused.returncode != 0 and "spec.replicas" in refused.stderr, refused
    control_plane.kubectl("scale", "statefulset/nginx", "--replicas=4", "-n", namespace)
    extra = kube.wait_for(lambda: kube.find("v1", "Pod", "nginx-3", namespace),
                          what="the pod past the group's size")
    kube.wait_for(lambda: b.event_counts(kube, namespace, "ExcessPod", "Pod").get("nginx-3"),
                  what="an ExcessPod Event on it")
    assert gated(kube.get("v1", "Pod", "nginx-3", namespace)), extra
    assert len([p for p in pods(kube, namespace) if running(p)]) == 3


def preempt_with_high_job(kube: Kube, namespace: str, cpu: str) -> None:
    kube.create(b.job("high", namespace, cpu=cpu, run_for="3s",
                      priority_class=f"{namespace}-high"))


def test_a_preempted_statefulset_is_stopped_whole_and_admitted_again(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    """Preempted, the group's pods are deleted by kuota; the StatefulSet makes them again,
    gated, and the group runs again once the preemptor is done."""
    b.pool_queue(control_plane, kube, namespace, {"cpu": 3}, nodes=2, node_cpu="4")
    kube.create(sample_owner("StatefulSet", namespace))
    kube.wait_for(lambda: len([p for p in pods(kube, namespace) if running(p)]) == 3,
                  what="the three replicas running")
    preempt_with_high_job(kube, namespace, cpu="2")
    kube.wait_for(lambda: b.event_counts(kube, namespace, "Stopped", "Pod"),
                  what="the group's pods deleted by kuota")
    kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                  what="the preemptor to run once the replicas are gone", timeout=90)
    kube.wait_for(lambda: len([p for p in pods(kube, namespace) if running(p)]) == 3,
                  what="the StatefulSet's group admitted and running again", timeout=90)


def test_a_preempted_deployment_replica_is_replaced_and_queued_again(
        control_plane: ControlPlane, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 2}, nodes=2, node_cpu="4")
    kube.create(sample_owner("Deployment", namespace, replicas=2))
    first = kube.wait_for(lambda: (r := [p for p in pods(kube, namespace) if running(p)])
                          and len(r) == 2 and r, what="both replicas running")
    preempt_with_high_job(kube, namespace, cpu="1")
    kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                  what="the preemptor to run in a preempted replica's place", timeout=90)

    def back() -> list[Body] | None:
        now = [p for p in pods(kube, namespace) if running(p)]
        return now if len(now) == 2 else None

    now = kube.wait_for(back, what="the ReplicaSet's replacement queued and running",
                        timeout=90)
    assert {p["metadata"]["name"] for p in now} != {p["metadata"]["name"] for p in first}


def test_a_cronjobs_jobs_are_queued(control_plane: ControlPlane, kube: Kube, namespace: str,
                                    operator: OperatorProcess) -> None:
    """A CronJob works through the Jobs it creates: their template carries the queue label,
    so each Job is suspended at creation, queued, admitted and finished (the CronJob
    controller makes the first at the next minute)."""
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 2}, nodes=2, node_cpu="4")
    template = b.job("tick", namespace, cpu="1", run_for="2s")
    kube.create({"apiVersion": "batch/v1", "kind": "CronJob",
                 "metadata": {"name": "tick", "namespace": namespace},
                 "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid",
                          "jobTemplate": {"metadata": {"labels": template["metadata"]["labels"]},
                                          "spec": template["spec"]}}})
    job = kube.wait_for(lambda: next(iter(kube.list("batch/v1", "Job", namespace)), None),
                        what="the CronJob's first Job", timeout=75)
    name = job["metadata"]["name"]
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", name, namespace)),
                         what="its Job queued, admitted and complete") == "Complete"
    workload = b.workload_of(kube.list(b.API, "Workload", namespace), name)
    assert workload is not None and b.is_true(workload, "Finished")
    ran = kube.get("batch/v1", "Job", name, namespace)
    assert ran["spec"]["template"]["spec"]["nodeSelector"] == {"pool": pool}
    kube.delete("batch/v1", "CronJob", "tick", namespace)
