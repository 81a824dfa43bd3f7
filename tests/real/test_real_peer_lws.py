"""Peer controllers on the real control plane: LeaderWorkerSet's own manager, as released.

Before kuota can queue LeaderWorkerSets, LWS's manager (built from its Go module by
hack/controllers/build-controllers.sh, run by tests/cluster/controllers.py as its
ServiceAccount, with its webhooks registered) must be shown to work here on its
own: a LeaderWorkerSet becomes a leader StatefulSet (one leader pod per group),
each leader pod a worker StatefulSet of its group, kube-scheduler binds all the
pods to kwok nodes, kwok runs them, and LWS reports the set ready.

LWS's pod webhook is part of that, not a check: it labels a leader pod with its
group index (the controller makes the group's worker StatefulSet only once the
leader has it) and a worker pod with its worker index, and gives both containers
the LWS_* environment. It is registered in ``lws-mutating-webhook-configuration``,
called by the API server after kuota's ``kuota`` (mutating configurations go in
name order): the kuota operator runs too, its shipped webhook sees every
StatefulSet and pod created in a test namespace that carries one of kuota's
labels, and these carry none — LWS's labels must be there all the same.
"""

from __future__ import annotations

import json
from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.cluster.peer_releases import (
    LWS_API,
    LWS_GROUP_INDEX_LABEL,
    LWS_NAME_LABEL,
    LWS_SIZE_ANNOTATION,
    LWS_WORKER_INDEX_LABEL,
)
from tests.real import builders as b
from tests.real.operator import OperatorProcess

GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
REVISION_LABEL = "leaderworkerset.sigs.k8s.io/template-revision-hash"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"


def leaderworkerset_multi_template(name: str, namespace: str, *, replicas: int = 2,
                                   size: int = 3,
                                   node_selector: dict[str, str] | None = None
                                   ) -> dict[str, Any]:
    """LWS's example config/samples/leaderworkerset_multi_template.yaml: a leader template
    (container ``nginx2``) and a worker template (``nginx``), each asking for 50m CPU.
    Changed: ``replicas`` groups of ``size`` pods (the sample has 3 of 4), the pods keep
    running under kwok (run-for "1h", tests/cluster/kwok-stages.yaml) as servers do, and
    ``node_selector`` keeps them on the test's own nodes (the control plane is shared).
    Restart and rollout policies are left out, as in the sample, for the CRD's defaults
    and LWS's defaulting webhook to fill in."""

    def template(container: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{
            "name": container, "image": "nginxinc/nginx-unprivileged:1.27",
            "resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "50m"}},
            "ports": [{"containerPort": 8080}]}]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        return {"metadata": {"annotations": {"kuota.dev/test-run-for": "1h"}}, "spec": spec}

    return {"apiVersion": LWS_API, "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": namespace, "labels": {
                "app.kubernetes.io/name": "leaderworkerset",
                "app.kubernetes.io/instance": "leaderworkerset-multi-template",
                "app.kubernetes.io/part-of": "lws",
                "app.kubernetes.io/managed-by": "kustomize",
                "app.kubernetes.io/created-by": "lws"}},
            "spec": {"replicas": replicas,
                     "leaderWorkerTemplate": {"leaderTemplate": template("nginx2"),
                                              "size": size,
                                              "workerTemplate": template("nginx")}}}


def _refusal(control_plane: ControlPlane, pod: dict[str, Any]) -> str:
    """The API server's error for a dry-run create of ``pod`` (which must be refused)."""
    done = control_plane.kubectl("create", "--dry-run=server", "-f", "-",
                                 input=json.dumps(pod), check=False)
    assert done.returncode != 0, f"the API server accepted {pod['metadata']}"
    return done.stderr


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}


class TestLeaderWorkerSet:
    def test_a_leaderworkerset_runs_its_groups_on_kwok_nodes_and_is_available(
            self, control_plane: ControlPlane, lws_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        nodes = {f"{namespace}-n1", f"{namespace}-n2"}
        pool = {"pool": f"{namespace}-pool"}
        control_plane.add_nodes(*(node(n, cpu="4", labels=pool) for n in sorted(nodes)))

        name = "lws-multi"
        created = kube.create(leaderworkerset_multi_template(name, namespace, node_selector=pool))
        # LWS's defaulting webhook, called by the API server on 127.0.0.1 (the CRD's schema
        # defaults restart policy and rollout strategy; the network config only the webhook).
        spec = created["spec"]
        assert spec["networkConfig"]["subdomainPolicy"] == "Shared", spec
        assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
        assert spec["rolloutStrategy"]["type"] == "RollingUpdate", spec

        # The leader StatefulSet (one leader per group), then one worker StatefulSet per group,
        # made from each leader pod once LWS's pod webhook has given it its group index.
        def statefulsets() -> dict[str, dict[str, Any]] | None:
            found = {s["metadata"]["name"]: s for s in kube.list(
                "apps/v1", "StatefulSet", namespace, label_selector=f"{LWS_NAME_LABEL}={name}")}
            return found if set(found) == {name, f"{name}-0", f"{name}-1"} else None

        sets = kube.wait_for(statefulsets, what="the leader and 2 worker StatefulSets")
        assert sets[name]["spec"]["replicas"] == 2
        owner = sets[name]["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == \
            ("LeaderWorkerSet", name, True), sets[name]["metadata"]
        for group in ("0", "1"):
            workers = sets[f"{name}-{group}"]
            assert workers["spec"]["replicas"] == 2, workers["spec"]
            assert workers["spec"]["ordinals"]["start"] == 1, workers["spec"]
            assert workers["metadata"]["labels"][LWS_GROUP_INDEX_LABEL] == group
            owner = workers["metadata"]["ownerReferences"][0]
            # A group's workers belong to its leader pod: they go when it goes.
            assert (owner["kind"], owner["name"]) == ("Pod", f"{name}-{group}"), owner
        # The headless Service the pods' hostnames (LWS_LEADER_ADDRESS) resolve through.
        service = kube.wait_for(lambda: kube.find("v1", "Service", name, namespace),
                                what="the LeaderWorkerSet's headless Service")
        assert service["spec"]["clusterIP"] == "None"

        selector = f"{LWS_NAME_LABEL}={name}"
        pods = kube.wait_for(
            lambda: (found := kube.list("v1", "Pod", namespace, label_selector=selector))
            and len(found) == 6 and all(p["status"].get("phase") == "Running" for p in found)
            and found,
            what="the 6 pods of the LeaderWorkerSet to run", timeout=90)
        by_name = {p["metadata"]["name"]: p for p in pods}
        assert set(by_name) == {f"{name}-0", f"{name}-0-1", f"{name}-0-2",
                                f"{name}-1", f"{name}-1-1", f"{name}-1-2"}, sorted(by_name)
        assert {p["spec"]["nodeName"] for p in pods} <= nodes
        for group in ("0", "1"):
            leader = by_name[f"{name}-{group}"]
            labels = leader["metadata"]["labels"]
            # worker-index 0 comes from the leader StatefulSet's template; group-index and
            # group-key only from LWS's pod webhook.
            assert (labels[LWS_GROUP_INDEX_LABEL], labels[LWS_WORKER_INDEX_LABEL]) == \
                (group, "0"), labels
            assert labels[GROUP_KEY_LABEL], labels
            assert leader["metadata"]["annotations"][LWS_SIZE_ANNOTATION] == "3"
            assert LEADER_NAME_ANNOTATION not in leader["metadata"]["annotations"]
            assert leader["spec"]["containers"][0]["name"] == "nginx2"
            for worker_index in ("1", "2"):
                worker = by_name[f"{name}-{group}-{worker_index}"]
                labels = worker["metadata"]["labels"]
                # group-index and group-key from the worker StatefulSet's template;
                # worker-index only from LWS's pod webhook.
                assert (labels[LWS_GROUP_INDEX_LABEL], labels[LWS_WORKER_INDEX_LABEL]) == \
                    (group, worker_index), labels
                assert labels[GROUP_KEY_LABEL] == leader["metadata"]["labels"][GROUP_KEY_LABEL]
                annotations = worker["metadata"]["annotations"]
                assert annotations[LWS_SIZE_ANNOTATION] == "3", annotations
                assert annotations[LEADER_NAME_ANNOTATION] == f"{name}-{group}", annotations
                assert worker["spec"]["containers"][0]["name"] == "nginx"
            # The environment LWS's pod webhook gives every container of the group.
            for pod_name in (f"{name}-{group}", f"{name}-{group}-1", f"{name}-{group}-2"):
                pod = by_name[pod_name]
                env = _env(pod)
                assert env.get("LWS_LEADER_ADDRESS") == \
                    f"{name}-{group}.{name}.{namespace}", (pod_name, env)
                assert env.get("LWS_GROUP_SIZE") == "3", (pod_name, env)
                assert env.get("LWS_WORKER_INDEX") == \
                    pod["metadata"]["labels"][LWS_WORKER_INDEX_LABEL], (pod_name, env)
            # No kuota label: kuota's webhooks were not called on them and gated nothing.
            assert not any(p["spec"].get("schedulingGates") for p in pods)

        def available() -> dict[str, Any] | None:
            lws = kube.get(LWS_API, "LeaderWorkerSet", name, namespace)
            status = lws.get("status") or {}
            return lws if status.get("readyReplicas") == 2 and b.is_true(lws, "Available") \
                else None

        lws = kube.wait_for(available, what="the LeaderWorkerSet to be Available", timeout=120)
        status = lws["status"]
        assert (status.get("replicas"), status.get("updatedReplicas")) == (2, 2), status
        assert not b.is_true(lws, "Progressing"), status
        assert not b.is_true(lws, "UpdateInProgress"), status
        running = {p["metadata"]["name"]: p["status"]["phase"]
                   for p in kube.list("v1", "Pod", namespace, label_selector=selector)}
        assert set(running.values()) == {"Running"}, running

    def test_kuotas_pod_webhooks_are_called_before_lws_s(
            self, control_plane: ControlPlane, lws_controller: PeerController,
            namespace: str, operator: OperatorProcess) -> None:
        """Mutating configurations are called in name order: ``kuota`` before
        ``lws-mutating-webhook-configuration``. So kuota's pod webhook sees an LWS pod as its
        StatefulSet made it (a leader without its group-index label, a worker without its
        worker-index), and LWS's sees the pod as kuota left it. Shown with a pod each would
        refuse: only the first one called gets to."""
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "probe-0", "namespace": namespace,
                            # kuota refuses a pod group without its size (pod-group-total-count);
                            "labels": {"kuota.dev/pod-group-name": "probe",
                                       # LWS refuses an LWS pod without its size annotation.
                                       LWS_NAME_LABEL: "probe", LWS_WORKER_INDEX_LABEL: "0"}},
               "spec": {"containers": [{"name": "main", "image": "registry.example/fake:1"}]}}
        both = _refusal(control_plane, pod)
        assert 'admission webhook "gate-pods.kuota.dev" denied the request' in both, both
        # LWS refuses it on its own: it was not called above, rather than letting it by.
        only_lws = json.loads(json.dumps(pod))
        del only_lws["metadata"]["labels"]["kuota.dev/pod-group-name"]
        refused = _refusal(control_plane, only_lws)
        assert 'admission webhook "mpod.kb.io" denied the request' in refused, refused
        assert "size annotation is unexpectedly missing" in refused, refused
        configurations = control_plane.kubectl(
            "get", "mutatingwebhookconfigurations", "-o", "name").stdout.split()
        assert {c.rpartition("/")[2] for c in configurations} >= \
            {"kuota", "lws-mutating-webhook-configuration"}, configurations


class TestQueuedLeaderWorkerSet:
    """LWS's multi-template sample with only the queue label added, under kuota: each
    group is one gang of pod sets ``leader`` (1) and ``worker`` (size - 1), as in Kueue."""

    def test_each_group_is_a_gang_admitted_as_quota_allows(
            self, control_plane: ControlPlane, lws_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        # One group (3 pods of 50m) fits; the second waits.
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "200m"}, node_cpu="4")
        body = leaderworkerset_multi_template("serve", namespace)
        body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "main"
        kube.create(body)

        def groups() -> dict[str, Any] | None:
            found = {w["metadata"]["name"]: w for w in kube.list(b.API, "Workload", namespace)}
            return found if len(found) == 2 else None

        workloads = kube.wait_for(groups, what="a Workload per group")
        assert sorted(workloads) == ["group-lws-serve-0", "group-lws-serve-1"]
        for workload in workloads.values():
            assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == \
                [("leader", 1), ("worker", 2)]
            assert workload["metadata"]["labels"]["kuota.dev/owner-kind"] == \
                "LeaderWorkerSet"

        def running() -> list[dict[str, Any]]:
            return [p for p in kube.list("v1", "Pod", namespace,
                                         label_selector=f"{LWS_NAME_LABEL}=serve")
                    if (p.get("status") or {}).get("phase") == "Running"]

        admitted = kube.wait_for(lambda: (r := running()) and len(r) == 3 and r,
                                 what="one whole group running", timeout=90)
        assert len({p["metadata"]["labels"][LWS_GROUP_INDEX_LABEL] for p in admitted}) == 1
        assert all(p["spec"]["nodeSelector"] == {"pool": pool} for p in admitted)
        waiting = [p for p in kube.list("v1", "Pod", namespace,
                                        label_selector=f"{LWS_NAME_LABEL}=serve")
                   if p not in admitted]
        assert waiting and all(not p["spec"].get("nodeName") for p in waiting)
        assert len(running()) == 3  # never part of the second group

        kube.delete(LWS_API, "LeaderWorkerSet", "serve", namespace)
        kube.wait_for(lambda: not kube.list(b.API, "Workload", namespace),
                      what="the groups' Workloads gone with their pods", timeout=90)

    def test_a_preempted_group_is_stopped_whole_and_admitted_again(
            self, control_plane: ControlPlane, lws_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        """Preempted, the group's pods are deleted by kuota; LWS makes the group again,
        gated, and it runs again whole once the preemptor is done."""
        b.pool_queue(control_plane, kube, namespace, {"cpu": "200m"}, node_cpu="4")
        body = leaderworkerset_multi_template("serve", namespace, replicas=1)
        body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "main"
        kube.create(body)

        def running() -> list[dict[str, Any]]:
            return [p for p in kube.list("v1", "Pod", namespace,
                                         label_selector=f"{LWS_NAME_LABEL}=serve")
                    if (p.get("status") or {}).get("phase") == "Running"
                    and not p["metadata"].get("deletionTimestamp")]

        kube.wait_for(lambda: len(running()) == 3, what="the group running", timeout=90)
        kube.create(b.job("high", namespace, cpu="100m", run_for="3s",
                          priority_class=f"{namespace}-high"))
        kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                      what="the preemptor to run once the group's pods are gone", timeout=90)
        kube.wait_for(lambda: len(running()) == 3, what="the group admitted and running again",
                      timeout=90)
