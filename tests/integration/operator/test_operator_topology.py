"""Topology-aware admission on Kubernetes: one rack per Job, pods pinned to its hosts.

Two racks of two 4-CPU nodes. Jobs ask for ``kuota.dev/podset-required-topology:
rack``. The emulator has no Job controller, so the test creates a started
Job's pods the way it would (owner reference, its labels, the template's
annotations, completion indices); the webhook gates them and the operator
ungates each with the nodeSelector of its host.
"""

from __future__ import annotations

import json
import pathlib
from collections import Counter
from typing import Any

from kuota.operator import names
from quota.api import TopologyAssignment
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

RACK = "cloud.example.com/rack"
HOST = "kubernetes.io/hostname"
PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
Body = dict[str, Any]


def node(name: str, rack: str, cpu: str = "4") -> Body:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {RACK: rack, HOST: name, "pool": "tas"}},
            "spec": {},
            "status": {"allocatable": {"cpu": cpu, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def setup(cluster: Emulator) -> None:
    flavor = h.flavor("tas", labels={"pool": "tas"})
    flavor["spec"]["topologyName"] = "dc"
    cluster.apply(
        {"apiVersion": h.API, "kind": "Topology", "metadata": {"name": "dc"},
         "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        flavor, h.cluster_queue("team", quotas={"tas": {"cpu": 100}}),
        h.local_queue("main", "team"),
        *(node(f"{rack}-n{i}", rack) for rack in ("r1", "r2") for i in (1, 2)))


def tas_job(name: str, parallelism: int) -> Body:
    job = h.job(name, parallelism=parallelism, completions=parallelism)
    job["spec"]["completionMode"] = "Indexed"
    job["spec"]["template"]["metadata"] = {
        "annotations": {"kuota.dev/podset-required-topology": RACK}}
    return job


def submit(cluster: Emulator, job: Body) -> None:
    """Create a Job through the API (and so through kuota's webhook, which suspends it)."""
    reply = call(cluster.url, "POST", JOBS, job)
    assert reply.status == 201 and reply.data["spec"]["suspend"] is True, reply.data


def create_pods(cluster: Emulator, job_name: str,
                added: dict[str, str] | None = None) -> list[str]:
    """Play the Job controller: one pod per completion index, from the started template
    (``added``: nodeSelector keys an admission plugin such as PodNodeSelector adds)."""
    job = h.get_job(cluster, job_name)
    template = json.loads(json.dumps(job["spec"]["template"]))
    if added:
        spec = template["spec"]
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **added}
    made = []
    for index in range(job["spec"]["parallelism"]):
        meta = template.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), "batch.kubernetes.io/job-name": job_name,
                  names.COMPLETION_INDEX: str(index)}
        annotations = {**(meta.get("annotations") or {}), names.COMPLETION_INDEX: str(index)}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{job_name}-{index}", "labels": labels,
                            "annotations": annotations,
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                                 "name": job_name,
                                                 "uid": job["metadata"]["uid"],
                                                 "controller": True}]},
               "spec": template["spec"]}
        reply = call(cluster.url, "POST", PODS, pod)
        assert reply.status == 201, reply.data
        assert {"name": names.TOPOLOGY_GATE} in reply.data["spec"]["schedulingGates"]
        made.append(pod["metadata"]["name"])
    return made


def pod_of(cluster: Emulator, name: str) -> Body:
    return cluster.get("v1", "Pod", name, "default")


def ungated(cluster: Emulator, pods: list[str]) -> bool:
    return all(not pod_of(cluster, p)["spec"].get("schedulingGates") for p in pods)


def assignment(cluster: Emulator, job_name: str) -> list[tuple[tuple[str, ...], int]]:
    wl = h.workload_of(cluster, job_name)
    assert wl is not None
    raw = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    found = TopologyAssignment.model_validate(raw)
    assert found.levels == (RACK, HOST)
    return list(found.domains())


class TestTopology:
    def test_jobs_get_one_rack_each_and_their_pods_are_pinned_to_its_hosts(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup(cluster)
        with h.Running(cluster, certs) as running:
            submit(cluster, tas_job("huge", 9))  # more than any rack holds (8 CPUs)
            submit(cluster, tas_job("first", 6))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
            first = assignment(cluster, "first")
            assert {values[0] for values, _ in first} == {"r1"}  # tie: the first rack
            assert sum(count for _, count in first) == 6
            template = h.get_job(cluster, "first")["spec"]["template"]
            assert template["metadata"]["labels"][names.TOPOLOGY_LABEL] == "true"

            pods = create_pods(cluster, "first")
            h.wait(cluster, lambda: ungated(cluster, pods), "the pods to be ungated")
            selectors = [pod_of(cluster, p)["spec"]["nodeSelector"] for p in pods]
            assert all(s[RACK] == "r1" and s["pool"] == "tas" for s in selectors)
            per_host = Counter(s[HOST] for s in selectors)
            assert dict(per_host) == {f"{v[1]}": c for v, c in first}
            # By rank: neighbouring indices share a host, in the assignment's order.
            slots = [values[1] for values, count in first for _ in range(count)]
            assert [s[HOST] for s in selectors] == slots

            # Best fit: 5 pods no longer fit beside the first Job (2 CPUs left in r1).
            submit(cluster, tas_job("second", 5))
            h.wait(cluster, lambda: h.running(cluster, "second"), "the second Job to start")
            assert {values[0] for values, _ in assignment(cluster, "second")} == {"r2"}

            def huge_waits_for_topology() -> bool:
                found = h.condition(h.workload_of(cluster, "huge"), "QuotaReserved")
                return bool(found and found["status"] == "False"
                            and RACK in found.get("message", ""))
            h.wait(cluster, huge_waits_for_topology, "the huge Job's reason to be written")
            assert not h.running(cluster, "huge")
            # A stray pod of the waiting Job is gated and stays so: nothing to pin it to.
            stray = {"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "huge-stray",
                                  "labels": {"batch.kubernetes.io/job-name": "huge"},
                                  "annotations": {"kuota.dev/podset-required-topology": RACK}},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
            reply = call(cluster.url, "POST", PODS, stray)
            assert reply.data["spec"]["schedulingGates"] == [{"name": names.TOPOLOGY_GATE}]
            running.quiet()
            assert pod_of(cluster, "huge-stray")["spec"]["schedulingGates"]

    def test_a_restarted_operator_counts_the_hosts_admitted_workloads_hold(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup(cluster)
        with h.Running(cluster, certs):
            submit(cluster, tas_job("first", 7))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
        with h.Running(cluster, certs):
            # Restored from status.admission: r1 has 1 CPU left, so 2 pods go to r2.
            submit(cluster, tas_job("second", 2))
            h.wait(cluster, lambda: h.running(cluster, "second"), "the second Job to start")
            assert {values[0] for values, _ in assignment(cluster, "second")} == {"r2"}

    def test_a_pod_group_asking_for_a_rack_is_started_then_pinned(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup(cluster)
        with h.Running(cluster, certs):
            made = []
            for i in range(3):
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": f"g-{i}",
                                    "labels": {"kuota.dev/pod-group-name": "g",
                                               "kuota.dev/queue-name": "main"},
                                    "annotations": {"kuota.dev/pod-group-total-count": "3",
                                                    "kuota.dev/podset-required-topology": RACK}},
                       "spec": {"containers": [{"name": "c", "image": "busybox",
                                                "resources": {"requests": {"cpu": "2"}}}]}}
                reply = call(cluster.url, "POST", PODS, pod)
                assert [g["name"] for g in reply.data["spec"]["schedulingGates"]] == \
                    [names.ADMISSION_GATE, names.TOPOLOGY_GATE]
                made.append(pod["metadata"]["name"])
            h.wait(cluster, lambda: ungated(cluster, made), "the group's pods to be pinned")
            selectors = [pod_of(cluster, p)["spec"]["nodeSelector"] for p in made]
            assert len({s[RACK] for s in selectors}) == 1  # one rack
            assert all(s["pool"] == "tas" for s in selectors)  # the flavor's label kept
            assert max(Counter(s[HOST] for s in selectors).values()) <= 2  # 4 CPUs per host


class TestNodeSelectorConflicts:
    def test_a_pod_that_cannot_take_its_domain_deactivates_its_workload(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup(cluster)
        with h.Running(cluster, certs):
            submit(cluster, tas_job("pinned", 2))
            h.wait(cluster, lambda: h.running(cluster, "pinned"), "the Job to start")
            rack = assignment(cluster, "pinned")[0][0][0]
            other = "r2" if rack == "r1" else "r1"
            pods = create_pods(cluster, "pinned", added={RACK: other})

            wl = h.wait(cluster, lambda: (w := h.workload_of(cluster, "pinned"))
                        and w["spec"].get("active") is False and w, "the Workload deactivated")
            h.wait(cluster, lambda: not h.running(cluster, "pinned"), "the Job to stop")
            wl = h.workload_of(cluster, "pinned")
            evicted = h.condition(wl, "Evicted")
            assert evicted is not None and evicted["reason"] == "Deactivated"
            assert f"{RACK}={other}" in evicted["message"]
            assert "spec.active" in evicted["message"]
            h.wait(cluster, lambda: not h.is_true(h.workload_of(cluster, "pinned"),
                                                  "QuotaReserved"), "the quota released")

            def warnings(name: str) -> list[str]:
                return [e["message"] for e in cluster.list("v1", "Event", "default")
                        if e["involvedObject"]["name"] == name
                        and e["reason"] == "NodeSelectorConflict"]

            h.wait(cluster, lambda: warnings(pods[0]) or warnings(pods[1]),
                   "a Warning Event on the pod")
            assert len(h.wait(cluster, lambda: warnings(wl["metadata"]["name"]),
                              "a Warning Event on the Workload")) == 1
            assert all(pod_of(cluster, p)["spec"].get("schedulingGates") for p in pods)
            refused = [r for r in cluster.handler if r.method.value == "PATCH"
                       and "/pods/" in r.url.path and cluster.status_of(r) == 422]
            assert refused == []  # found before writing, not by the API server
