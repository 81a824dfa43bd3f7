"""Pod groups: plain pods gated at creation, one Workload, all gates lifted together."""

from __future__ import annotations

import pathlib
from typing import Any

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

PODS = "/api/v1/namespaces/default/pods"
GATE = {"name": "kuota.dev/admission"}


def pod(name: str, *, group: str = "g", total: int | None = 3, cpu: str = "1",
        queue: str = "main") -> dict[str, Any]:
    annotations = {} if total is None else {"kuota.dev/pod-group-total-count": str(total)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"kuota.dev/pod-group-name": group,
                                                  "kuota.dev/queue-name": queue},
                         "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def get(api: Emulator, name: str) -> dict[str, Any]:
    return api.get("v1", "Pod", name, "default")


def group_workload(api: Emulator, group: str = "g") -> dict[str, Any] | None:
    return api.find(h.API, "Workload", f"group-{group}", "default")


class TestPodGroups:
    def test_a_group_waits_for_all_its_pods_then_starts_together(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("fast", labels={"tier": "fast"}),
                      h.cluster_queue("team", quotas={"fast": {"cpu": 8}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs) as running:
            first = call(cluster.url, "POST", PODS, pod("driver", cpu="2"))
            assert first.status == 201 and first.data["spec"]["schedulingGates"] == [GATE]
            call(cluster.url, "POST", PODS, pod("worker-1"))
            running.quiet()
            assert group_workload(cluster) is None  # 2 of 3 pods: not a gang yet
            call(cluster.url, "POST", PODS, pod("worker-2"))

            h.wait(cluster, lambda: all(not get(cluster, n)["spec"].get("schedulingGates")
                                        for n in ("driver", "worker-1", "worker-2")),
                   "every gate to be lifted")
            wl = group_workload(cluster)
            assert wl is not None and h.is_true(wl, "Admitted")
            counts = sorted(ps["count"] for ps in wl["spec"]["podSets"])
            assert counts == [1, 2]  # two shapes: the driver and the workers
            assert get(cluster, "worker-1")["spec"]["nodeSelector"] == {"tier": "fast"}

            for name in ("driver", "worker-1", "worker-2"):
                cluster.patch("v1", "Pod", name, {"status": {"phase": "Succeeded"}},
                              namespace="default", subresource="status")
            h.wait(cluster, lambda: h.is_true(group_workload(cluster), "Finished"),
                   "the group's Workload to finish")

    def test_a_group_pod_without_its_size_is_rejected(self, cluster: Emulator,
                                                      certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("fast"), h.cluster_queue("team", quotas={"fast": {"cpu": 8}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs):
            reply = call(cluster.url, "POST", PODS, pod("lonely", total=None))
            plain = call(cluster.url, "POST", PODS, {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        assert reply.status == 422 and "pod-group-total-count" in reply.data["message"]
        assert plain.status == 201 and not plain.data["spec"].get("schedulingGates")


class TestSinglePods:
    def test_a_queued_pod_is_a_workload_of_its_own(self, cluster: Emulator,
                                                    certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("fast", labels={"tier": "fast"}),
                      h.cluster_queue("team", quotas={"fast": {"cpu": 2}}),
                      h.local_queue("main", "team"))
        lone = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "lone", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "2"}}}]}}
        with h.Running(cluster, certs):
            created = call(cluster.url, "POST", PODS, lone)
            assert created.status == 201 and created.data["spec"]["schedulingGates"] == [GATE]
            group = created.data["metadata"]["labels"]["kuota.dev/pod-group-name"]
            assert group.startswith("pod-lone-")
            h.wait(cluster, lambda: not get(cluster, "lone")["spec"].get("schedulingGates"),
                   "the pod to be admitted and ungated")
            assert get(cluster, "lone")["spec"]["nodeSelector"] == {"tier": "fast"}
            wl = group_workload(cluster, group)
            assert wl is not None and [ps["count"] for ps in wl["spec"]["podSets"]] == [1]
            cluster.patch("v1", "Pod", "lone", {"status": {"phase": "Failed"}},
                          namespace="default", subresource="status")
            h.wait(cluster, lambda: h.is_true(group_workload(cluster, group), "Finished"),
                   "its Workload to finish with the pod")
            finished = [c for c in group_workload(cluster, group)["status"]["conditions"]
                        if c["type"] == "Finished"]
            assert finished[0]["reason"] == "Failed"
