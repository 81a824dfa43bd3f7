"""The copy a member receives, and the follow / clean-up plan of an observation (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.federation import remote_job
from kuota.federation.member import Copy
from kuota.federation.reconcile import member_condition, reconcile, with_dispatched
from placement.model import Node
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission

Body = dict[str, Any]


def local_job(**meta: Any) -> Body:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "ml", "uid": "u-1",
                         "resourceVersion": "7",
                         "labels": {"kuota.dev/queue-name": "main", "team": "x"},
                         "annotations": {"kuota.dev/datasets": "imagenet"}, **meta},
            "spec": {"suspend": True, "parallelism": 4,
                     "selector": {"matchLabels": {"controller-uid": "u-1"}},
                     "template": {"metadata": {"labels": {"controller-uid": "u-1",
                                                          "app": "t"}},
                                  "spec": {"nodeSelector": {"disk": "ssd"},
                                           "containers": [{"name": "m", "image": "x"}]}}},
            "status": {"conditions": []}}


def admission(count: int = 2) -> Admission:
    return Admission("cq", (PodSetAdmission("main", count, {"cpu": "a100"}, {"cpu": 2000}),),
                     cluster="b")


FLAVORS = {"a100": FlavorConfig("a100", node_labels={"gpu-model": "a100"},
                                tolerations=())}


class TestBuild:
    def test_the_copy_runs_with_flavor_labels_origin_and_no_queue(self) -> None:
        body = remote_job.build(local_job(), admission(2), FLAVORS, origin="mgr",
                                workload="ml/job-train-u-1", member="b")
        meta, spec = body["metadata"], body["spec"]
        assert (meta["name"], meta["namespace"]) == ("train", "ml")
        assert meta["labels"] == {"team": "x", "kuota.dev/origin": "mgr"}
        assert meta["annotations"] == {"kuota.dev/datasets": "imagenet",
                                       "kuota.dev/origin-workload": "ml/job-train-u-1",
                                       "kuota.dev/member": "b"}
        assert "uid" not in meta and "resourceVersion" not in meta
        assert spec["suspend"] is False and spec["parallelism"] == 2
        assert "selector" not in spec
        template = spec["template"]
        assert template["metadata"]["labels"] == {"app": "t", "kuota.dev/origin": "mgr"}
        assert template["spec"]["nodeSelector"] == {"disk": "ssd", "gpu-model": "a100"}
        assert "status" not in body

    @pytest.mark.parametrize("managed_by", ["kuota.dev/multicluster",
                                            "kubernetes.io/job-controller", None])
    def test_the_copy_is_run_by_the_members_job_controller(self,
                                                           managed_by: str | None) -> None:
        job = local_job()
        job["spec"]["managedBy"] = managed_by
        body = remote_job.build(job, admission(), FLAVORS, origin="m", workload="ml/w",
                                member="b")
        assert "managedBy" not in body["spec"]

    def test_a_job_without_template_is_an_error_naming_it(self) -> None:
        job = local_job()
        job["spec"]["template"] = None
        with pytest.raises(remote_job.RemoteJobError, match=r"Job ml/train: spec\.template"):
            remote_job.build(job, admission(), FLAVORS, origin="m", workload="ml/w", member="b")

    @pytest.mark.parametrize(("annotation", "want"), [
        ("ml/w", "ml/w"), ("no-slash", None), (None, None)])
    def test_workload_of(self, annotation: str | None, want: str | None) -> None:
        meta: Body = {"annotations": {}}
        if annotation is not None:
            meta["annotations"][remote_job.ORIGIN_WORKLOAD_ANNOTATION] = annotation
        assert remote_job.workload_of({"metadata": meta}) == want


def copy(workload: str, name: str = "") -> Copy:
    return Copy("ml", name or workload.split("/")[-1], workload)


class TestReconcile:
    @pytest.mark.parametrize(("copies", "wanted", "creating", "want_follow", "want_delete",
                              "want_create"), [
        # followed: dispatched here
        ([copy("ml/a")], {"ml/a": "m1"}, (), ["ml/a"], [], []),
        # moved elsewhere while this member was lost: stale
        ([copy("ml/a")], {"ml/a": "m2"}, (), [], ["ml/a"], []),
        # finished or deleted: an orphan
        ([copy("ml/gone")], {}, (), [], ["ml/gone"], []),
        # unreadable annotation: an orphan too
        ([copy("", "x")], {}, (), [], [""], []),
        # dispatched here but absent: create (unless a create is in flight)
        ([], {"ml/a": "m1", "ml/b": "m2"}, (), [], [], ["ml/a"]),
        ([], {"ml/a": "m1"}, ("ml/a",), [], [], []),
    ])
    def test_plan(self, copies: list[Copy], wanted: dict[str, str], creating: tuple[str, ...],
                  want_follow: list[str], want_delete: list[str],
                  want_create: list[str]) -> None:
        plan = reconcile("m1", copies, wanted, creating=creating)
        assert [c.workload for c in plan.follow] == want_follow
        assert [c.workload for c in plan.delete] == want_delete
        assert list(plan.create) == want_create

    @pytest.mark.parametrize(("error", "recovering", "stale", "want_active", "want_reason"), [
        (None, False, 0, True, "Reachable"),
        (None, False, 2, True, "Reachable"),          # orphans do not make a member inactive
        (None, True, 1, False, "DeletingStaleCopies"),  # back from lost: clean up first
        (None, True, 0, True, "Reachable"),
        ("connection refused", False, 0, False, "Unreachable"),
    ])
    def test_member_condition(self, error: str | None, recovering: bool, stale: int,
                              want_active: bool, want_reason: str) -> None:
        active, reason, _ = member_condition(error=error, recovering=recovering, stale=stale)
        assert (active, reason) == (want_active, want_reason)

    def test_dispatched_amounts_are_added_to_observed_nodes(self) -> None:
        nodes = [Node("n1", {"cpu": 8000}, {"cpu": 1000}), Node("n2", {"cpu": 8000})]
        loaded = with_dispatched(nodes, [{"n1": {"cpu": 2000}}, {"n1": {"cpu": 500},
                                                                 "n3": {"cpu": 1}}])
        assert [dict(n.requested) for n in loaded] == [{"cpu": 3500}, {}]
