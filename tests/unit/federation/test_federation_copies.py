"""A JobSet dispatched to a member: the copy it is sent, and its status brought home (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.federation import copies
from kuota.federation.remote_job import RemoteJobError
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission

Body = dict[str, Any]
GPU = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
FLAVORS = {"a100": FlavorConfig("a100", {"gpu-model": "a100"}, tolerations=(GPU,)),
           "cpu": FlavorConfig("cpu", {"pool": "cpu"})}


def role(name: str, replicas: int = 1) -> Body:
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": 2, "completions": 2,
        "template": {"metadata": {"labels": {"role": name}},
                     "spec": {"containers": [{"name": "c", "image": "x"}]}}}}}


def local_jobset(**status: Any) -> Body:
    body: Body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                  "metadata": {"name": "train", "namespace": "ml", "uid": "u-1",
                               "resourceVersion": "9", "generation": 1,
                               "labels": {"kueue.x-k8s.io/queue-name": "main", "team": "x"},
                               "annotations": {"note": "kept"}},
                  "spec": {"suspend": True, "managedBy": "kuota.dev/multicluster",
                           "replicatedJobs": [role("driver"), role("workers", 2)]}}
    if status:
        body["status"] = status
    return body


def admission() -> Admission:
    return Admission("cq", (PodSetAdmission("driver", 2, {"cpu": "cpu"}, {"cpu": 1000}),
                            PodSetAdmission("workers", 4, {"cpu": "a100"}, {"cpu": 1000})),
                     cluster="member-b")


def template_spec(body: Body, index: int) -> Body:
    return body["spec"]["replicatedJobs"][index]["template"]["spec"]["template"]


class TestJobSetCopy:
    def test_the_copy_runs_each_role_on_its_flavor_for_the_member(self) -> None:
        sent = copies.build(local_jobset(), admission(), FLAVORS, origin="mgr",
                            workload="ml/jobset-train-u-1", member="member-b")
        assert sent["kind"] == "JobSet" and sent["spec"]["suspend"] is False
        assert "managedBy" not in sent["spec"]  # the member's JobSet controller runs it
        meta = sent["metadata"]
        assert (meta["name"], meta["namespace"]) == ("train", "ml")
        assert not {"uid", "resourceVersion", "generation"} & meta.keys()
        assert meta["labels"] == {"team": "x", "kuota.dev/origin": "mgr"}
        assert meta["annotations"] == {"note": "kept",
                                       "kuota.dev/origin-workload": "ml/jobset-train-u-1",
                                       "kuota.dev/member": "member-b"}
        driver, workers = template_spec(sent, 0), template_spec(sent, 1)
        assert driver["spec"]["nodeSelector"] == {"pool": "cpu"}
        assert workers["spec"]["nodeSelector"] == {"gpu-model": "a100"}
        assert workers["spec"]["tolerations"] == [GPU]
        # Its pods are known as ours on the member.
        assert driver["metadata"]["labels"] == {"role": "driver", "kuota.dev/origin": "mgr"}
        assert "status" not in sent

    def test_a_kind_dispatch_does_not_carry_is_refused_naming_it(self) -> None:
        with pytest.raises(RemoteJobError, match="a RayJob cannot be dispatched"):
            copies.build({**local_jobset(), "kind": "RayJob"}, admission(), FLAVORS,
                         origin="mgr", workload="ml/w", member="b")

    def test_a_jobset_whose_roles_cannot_be_read_is_refused_naming_the_field(self) -> None:
        broken = local_jobset()
        broken["spec"]["replicatedJobs"] = [{"name": "w", "replicas": "many"}]
        with pytest.raises(RemoteJobError, match=r"JobSet ml/train: spec\.replicatedJobs"):
            copies.build(broken, admission(), FLAVORS, origin="mgr", workload="ml/w",
                         member="b")


RUNNING = {"replicatedJobsStatus": [{"name": "workers", "active": 2, "ready": 2,
                                     "succeeded": 0, "failed": 0, "suspended": 0}],
           "restarts": 0}
COMPLETED = {"conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                             "message": "jobset completed successfully",
                             "lastTransitionTime": "2026-12-07T10:00:00Z"}],
             "replicatedJobsStatus": [{"name": "workers", "active": 0, "ready": 0,
                                       "succeeded": 2, "failed": 0, "suspended": 0}],
             "restarts": 0, "terminalState": "Completed"}


@pytest.mark.parametrize(("local", "remote", "want"), [
    ({}, RUNNING, {"status": RUNNING}),
    (RUNNING, RUNNING, None),
    (RUNNING, COMPLETED, {"status": {
        "conditions": COMPLETED["conditions"], "terminalState": "Completed",
        "replicatedJobsStatus": COMPLETED["replicatedJobsStatus"]}}),
    # Ended here: what it ended with stays, whatever the member shows next.
    (COMPLETED, RUNNING, None),
], ids=["running", "unchanged", "completed", "ended-stays"])
def test_a_jobsets_status_comes_home_whole_until_it_ends(
        local: Body, remote: Body, want: Body | None) -> None:
    got = copies.status_patch(local_jobset(**local), {"kind": "JobSet", "status": remote},
                              now="2026-12-07T11:00:00Z")
    assert got == want


@pytest.mark.parametrize(("labels", "owner", "want"), [
    ({"jobset.sigs.k8s.io/jobset-name": "train"}, "train-workers-0", "JobSet:ml/train"),
    ({"job-name": "train"}, None, "Job:ml/train"),
    ({}, None, None),
])
def test_a_pod_of_ours_is_counted_for_its_copy(labels: Body, owner: str | None,
                                               want: str | None) -> None:
    meta: Body = {"name": "p", "namespace": "ml", "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"kind": "Job", "name": owner, "controller": True}]
    assert copies.pod_copy(meta) == want
