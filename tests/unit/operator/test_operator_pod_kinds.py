"""Pod-based kinds: single Pods, Deployments' and StatefulSets' pods queued through their
pod templates, and the serving, fast-admission groups a StatefulSet makes."""

from __future__ import annotations

from typing import Any

import pytest

from kuota import explanation
from kuota.operator.kinds import podgroups, pods
from quota import api
from quota.workload import Admission, PodSetAdmission

Body = dict[str, Any]
QUEUE = {"kueue.x-k8s.io/queue-name": "main"}


def pod(name: str = "p", *, labels: dict[str, str] | None = None,
        owner: str | None = None, annotations: dict[str, str] | None = None,
        phase: str | None = None) -> Body:
    meta: Body = {"name": name, "namespace": "ns", "labels": dict(labels or {}),
                  "annotations": dict(annotations or {})}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1" if owner == "Job" else "apps/v1",
                                    "kind": owner, "name": "o", "uid": "u",
                                    "controller": True}]
    body: Body = {"metadata": meta, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    if phase:
        body["status"] = {"phase": phase}
    return body


class TestSinglePods:
    @pytest.mark.parametrize(("body", "want_group"), [
        (pod(labels=QUEUE), True),
        (pod(labels=QUEUE, owner="ReplicaSet"), True),  # a Deployment's replica
        (pod(), False),  # not queued
        (pod(labels=QUEUE, owner="Job"), False),  # queued with its Job, or not at all
        (pod(labels={**QUEUE, "batch.kubernetes.io/job-name": "j"}), False),
        (pod(labels={**QUEUE, "kuota.dev/pod-group-name": "g"}), False),  # a group already
    ])
    def test_which_pods_are_a_group_of_one(self, body: Body, want_group: bool) -> None:
        marks = pods.single_pod_marks(body)
        assert (marks is not None) is want_group
        if marks is not None:
            labels, annotations = marks
            assert labels["kuota.dev/pod-group-name"].startswith("pod-p-")
            assert annotations == {"kuota.dev/pod-group-total-count": "1",
                                   "kuota.dev/retriable-in-group": "false"}

    def test_each_pod_made_is_a_new_group(self) -> None:
        first, second = (pods.single_pod_marks(pod(labels=QUEUE)) for _ in range(2))
        assert first is not None and second is not None and first[0] != second[0]

    @pytest.mark.parametrize(("base", "want_len"), [("x" * 10, 17), ("x" * 100, 63)])
    def test_group_names_are_label_values(self, base: str, want_len: int) -> None:
        assert len(pods.group_name(base, "abcdef")) == want_len

    @pytest.mark.parametrize(("phase", "want"), [("Succeeded", "Succeeded"),
                                                 ("Failed", "Failed"), ("Running", None)])
    def test_a_group_of_one_ends_with_its_pod(self, phase: str, want: str | None) -> None:
        labels, annotations = pods.single_pod_marks(pod(labels=QUEUE)) or ({}, {})
        body = pod(labels={**QUEUE, **labels}, annotations=annotations, phase=phase)
        got = podgroups.outcome([body], 1)
        assert (got[0] if got else None) == want


def owner(kind: str, *, replicas: int | None = 3, labels: dict[str, str] | None = None,
          template_meta: Body | None = None) -> Body:
    spec: Body = {"template": {"metadata": template_meta or {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c"}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web", "namespace": "ns",
                         "labels": QUEUE if labels is None else labels}, "spec": spec}


class TestTemplates:
    @pytest.mark.parametrize(("body", "want"), [
        (owner("Deployment"), {"labels": {"kuota.dev/queue-name": "main"}}),
        (owner("Deployment", labels={**QUEUE, "kuota.dev/priority-class": "high"}),
         {"labels": {"kuota.dev/queue-name": "main", "kuota.dev/priority-class": "high"}}),
        (owner("StatefulSet"),
         {"labels": {"kuota.dev/queue-name": "main", "kuota.dev/pod-group-name": "sts-web"},
          "annotations": {"kuota.dev/pod-group-total-count": "3",
                          "kuota.dev/pod-group-serving": "true",
                          "kuota.dev/pod-group-fast-admission": "true"}}),
        (owner("StatefulSet", replicas=None),
         {"labels": {"kuota.dev/queue-name": "main", "kuota.dev/pod-group-name": "sts-web"},
          "annotations": {"kuota.dev/pod-group-total-count": "1",
                          "kuota.dev/pod-group-serving": "true",
                          "kuota.dev/pod-group-fast-admission": "true"}}),
        (owner("Deployment", labels={}), None),  # not queued
        (owner("Deployment", template_meta={"labels": {"kuota.dev/queue-name": "main"}}),
         None),  # already marked
    ])
    def test_template_patch(self, body: Body, want: Body | None) -> None:
        got = pods.template_patch(body)
        assert (got["template"]["metadata"] if got else None) == want

    @pytest.mark.parametrize(("before", "after", "want_refused"), [
        (3, 3, False), (3, 0, False), (0, 5, False), (3, 4, True), (None, 2, True),
    ])
    def test_a_queued_statefulset_scales_only_to_and_from_zero(
            self, before: int | None, after: int, want_refused: bool) -> None:
        got = pods.scaling_error(owner("StatefulSet", replicas=before),
                                 owner("StatefulSet", replicas=after))
        assert (got is not None) is want_refused
        if got:
            assert got.startswith("spec.replicas:")


class TestDefaultQueue:
    """--default-queue (Kueue's manageJobsWithoutQueueName) for the pod-based kinds."""

    @staticmethod
    def controlled(body: Body) -> Body:
        body["metadata"]["ownerReferences"] = [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                                "kind": "LeaderWorkerSet", "name": "lws",
                                                "uid": "u", "controller": True}]
        return body

    @pytest.mark.parametrize(("body", "enabled", "has_default", "want"), [
        (owner("Deployment", labels={}), True, True, "default"),
        (owner("StatefulSet", labels={}), True, True, "default"),
        (owner("Deployment", labels={}), False, True, None),  # the flag is off
        (owner("Deployment", labels={}), True, False, None),  # no LocalQueue default there
        (owner("Deployment"), True, True, None),  # its own queue label wins
        (controlled(owner("StatefulSet", labels={})), True, True, None),  # an LWS's own
        (pod(labels={"app": "x"}), True, True, "default"),  # a bare Pod
        (controlled(pod(labels={"app": "x"})), True, True, None),  # a controlled one's
    ])
    def test_default_queue(self, body: Body, enabled: bool, has_default: bool,
                           want: str | None) -> None:
        asked: list[tuple[str, str]] = []

        def exists(namespace: str, name: str) -> bool:
            asked.append((namespace, name))
            return has_default

        assert pods.default_queue(body, enabled=enabled, queue_exists=exists) == want
        assert asked in ([], [("ns", "default")])

    def test_a_defaulted_object_is_queued_as_a_labelled_one(self) -> None:
        labelled = pods.with_queue(owner("Deployment", labels={"app": "web"}), "default")
        assert labelled["metadata"]["labels"] == {"app": "web",
                                                  "kuota.dev/queue-name": "default"}
        got = pods.template_patch(labelled)
        assert got == {"template": {"metadata": {"labels": {
            "kuota.dev/queue-name": "default"}}}}


class TestServingGroups:
    def sts_pod(self, name: str, phase: str | None = None) -> Body:
        marks = (pods.template_patch(owner("StatefulSet")) or {})["template"]["metadata"]
        return pod(name, labels={**QUEUE, **marks["labels"]},
                   annotations=marks["annotations"], owner="StatefulSet", phase=phase)

    def test_the_workload_is_made_from_the_first_pod(self) -> None:
        first = self.sts_pod("web-0")
        assert podgroups.enough([first], 3)
        body = podgroups.workload_for("ns/sts-web", [first], queue="main", priority=0,
                                      priority_class=None, total=3)
        assert [ps["count"] for ps in body["spec"]["podSets"]] == [3]

    def test_a_serving_group_never_finishes(self) -> None:
        ended = [self.sts_pod(f"web-{i}", "Succeeded") for i in range(3)]
        assert podgroups.outcome(ended, 3) is None

    def test_other_groups_wait_for_all_their_pods(self) -> None:
        some = pod("a", labels={**QUEUE, "kuota.dev/pod-group-name": "g"},
                   annotations={"kuota.dev/pod-group-total-count": "3"})
        assert not podgroups.enough([some], 3)


class TestStartable:
    """An admitted group starts at most its admitted count per pod set."""

    @pytest.mark.parametrize(("phases", "admitted", "want_start", "want_excess"), [
        (["gated", "gated", "gated"], 3, 3, 0),
        (["gated", "gated", "gated", "gated"], 3, 3, 1),  # scaled past its size
        (["Running", "Running", "gated"], 3, 1, 0),  # a late pod of a StatefulSet
        (["Running", "Succeeded", "Running", "gated"], 3, 0, 1),
        (["Running", "Failed", "Running", "gated"], 3, 1, 0),  # replaces the failed one
    ])
    def test_startable(self, phases: list[str], admitted: int, want_start: int,
                       want_excess: int) -> None:
        group = []
        for i, phase in enumerate(phases):
            body = pod(f"p{i}", labels={**QUEUE, "kuota.dev/pod-group-name": "g"},
                       annotations={"kuota.dev/pod-group-total-count": str(admitted)},
                       phase=None if phase == "gated" else phase)
            if phase == "gated":
                body["spec"]["schedulingGates"] = [{"name": "kuota.dev/admission"}]
            else:
                body["metadata"]["annotations"]["kuota.dev/admission"] = "cq"
            group.append(body)
        name = podgroups.shape(group[0])
        given = Admission("cq", (PodSetAdmission(name, admitted, {"cpu": "f"}, {"cpu": 1}),))
        start, excess = podgroups.startable(group, given)
        assert (len(start), len(excess)) == (want_start, want_excess)


class TestOwnerShown:
    """``kubectl get workloads`` (its Owner column), describe and the dashboard name what a
    Workload stands for."""

    @pytest.mark.parametrize(("body", "want_label", "want_owner"), [
        (pod("p", labels={**QUEUE, "kuota.dev/pod-group-name": "pod-p-1"},
             annotations={"kuota.dev/pod-group-total-count": "1"}), "Pod", "Pod pod-p-1"),
        (pod("web-0", labels={**QUEUE, "kuota.dev/pod-group-name": "sts-web"},
             annotations={"kuota.dev/pod-group-total-count": "3"}, owner="StatefulSet"),
         "StatefulSet", "StatefulSet sts-web"),
        (pod("web-x", labels={**QUEUE, "kuota.dev/pod-group-name": "pod-web-x-1",
                              "pod-template-hash": "abc"},
             annotations={"kuota.dev/pod-group-total-count": "1"}, owner="ReplicaSet"),
         "Deployment", "Deployment pod-web-x-1"),
        (pod("a", labels={**QUEUE, "kuota.dev/pod-group-name": "g"},
             annotations={"kuota.dev/pod-group-total-count": "1"}), "Pod", "Pod g"),
    ])
    def test_a_groups_workload_names_its_owner(self, body: Body, want_label: str,
                                               want_owner: str) -> None:
        group = body["metadata"]["labels"]["kuota.dev/pod-group-name"]
        manifest = podgroups.workload_for(f"ns/{group}", [body], queue="main", priority=0,
                                          priority_class=None)
        assert manifest["metadata"]["labels"]["kuota.dev/owner-kind"] == want_label
        workload = api.parse_object(manifest)
        assert isinstance(workload, api.Workload)
        assert explanation.owner_of(workload) == want_owner


def lws(*, size: int = 4, leader: bool = True, startup: str | None = None) -> Body:
    template = {"spec": {"containers": [{"name": "c"}]}}
    lwt: Body = {"size": size, "workerTemplate": dict(template)}
    if leader:
        lwt["leaderTemplate"] = dict(template)
    spec: Body = {"replicas": 2, "leaderWorkerTemplate": lwt}
    if startup:
        spec["startupPolicy"] = startup
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "vllm", "namespace": "ns", "labels": QUEUE}, "spec": spec}


def lws_pod(name: str, sts: str, *, declared: str, index: str | None = None) -> Body:
    labels = {**QUEUE, "leaderworkerset.sigs.k8s.io/name": "vllm"}
    if index is not None:
        labels["leaderworkerset.sigs.k8s.io/group-index"] = index
    body = pod(name, labels=labels, annotations={"kuota.dev/pod-group-roles": declared,
                                                 "leaderworkerset.sigs.k8s.io/size": "4"},
               owner="StatefulSet")
    body["metadata"]["ownerReferences"][0]["name"] = sts
    return body


class TestLeaderWorkerSets:
    @pytest.mark.parametrize(("body", "want_roles"), [
        (lws(), {"leaderTemplate": "leader=1,worker=3", "workerTemplate": "leader=1,worker=3"}),
        (lws(leader=False), {"workerTemplate": "main=4"}),
    ])
    def test_its_templates_declare_the_groups_pod_sets(self, body: Body,
                                                       want_roles: dict[str, str]) -> None:
        patch = pods.template_patch(body)
        assert patch is not None
        got = {field: marks["metadata"]["annotations"]["kuota.dev/pod-group-roles"]
               for field, marks in patch["leaderWorkerTemplate"].items()}
        assert got == want_roles
        for marks in patch["leaderWorkerTemplate"].values():
            assert marks["metadata"]["labels"] == {"kuota.dev/queue-name": "main"}
            assert marks["metadata"]["annotations"]["kuota.dev/pod-group-serving"] == "true"

    def test_leader_ready_startup_is_refused_naming_the_field(self) -> None:
        assert pods.refusal(lws()) is None
        problem = pods.refusal(lws(startup="LeaderReady"))
        assert problem is not None and problem.startswith("spec.startupPolicy")

    @pytest.mark.parametrize(("body", "want"), [
        # The leader: its StatefulSet is named after the set; its index is its ordinal.
        (lws_pod("vllm-1", "vllm", declared="leader=1,worker=3"), ("lws-vllm-1", "leader")),
        (lws_pod("vllm-1-2", "vllm-1", declared="leader=1,worker=3", index="1"),
         ("lws-vllm-1", "worker")),
        (lws_pod("vllm-0", "vllm", declared="main=4"), ("lws-vllm-0", "main")),
    ])
    def test_each_pod_joins_its_groups_gang_in_its_role(self, body: Body,
                                                        want: tuple[str, str]) -> None:
        marks = pods.leader_worker_marks(body)
        assert marks is not None
        labels, annotations = marks
        assert (labels["kuota.dev/pod-group-name"], annotations["kuota.dev/pod-set"]) == want
        assert annotations["kuota.dev/pod-group-total-count"] == "4"
        assert pods.single_pod_marks(body) is None

    def test_the_groups_workload_has_kueues_pod_sets(self) -> None:
        group = []
        for name, sts, index in (("vllm-0", "vllm", None), ("vllm-0-1", "vllm-0", "0")):
            body = lws_pod(name, sts, declared="leader=1,worker=3", index=index)
            labels, annotations = pods.leader_worker_marks(body) or ({}, {})
            body["metadata"]["labels"].update(labels)
            body["metadata"]["annotations"].update(annotations)
            group.append(body)
        assert not podgroups.enough(group[:1], 4)  # the workers are made just after
        assert podgroups.enough(group, 4)
        manifest = podgroups.workload_for("ns/lws-vllm-0", group, queue="main", priority=0,
                                          priority_class=None, total=4)
        assert [(ps["name"], ps["count"]) for ps in manifest["spec"]["podSets"]] == \
            [("leader", 1), ("worker", 3)]
        assert manifest["metadata"]["labels"]["kuota.dev/owner-kind"] == "LeaderWorkerSet"
