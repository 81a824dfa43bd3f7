"""Jobs as workloads: the Workload a Job becomes, and the patches that start and stop it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kuota.operator import names
from kuota.operator.kinds import jobs
from quota import api
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission

SPOT_TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}


def job(*, parallelism: int | None = 1, completions: int | None = None,
        suspend: bool = True, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, node_selector: dict[str, str] | None = None,
        tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                           "initContainers": [{"name": "i", "resources": {
                               "requests": {"cpu": "3"}}}],
                           "overhead": {"cpu": "100m"}}
    if node_selector is not None:
        pod["nodeSelector"] = node_selector
    if tolerations is not None:
        pod["tolerations"] = tolerations
    spec: dict[str, Any] = {"suspend": suspend, "template": {"metadata": {"labels": {"a": "b"}},
                                                           "spec": pod}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "ml", "uid": "abcdef-123",
                         "labels": labels if labels is not None
                         else {"kuota.dev/queue-name": "main"},
                         "annotations": annotations or {}},
            "spec": spec}


def admission(count: int = 2, flavors: dict[str, str] | None = None) -> Admission:
    return Admission("team", (PodSetAdmission("main", count, flavors or {"cpu": "spot"},
                                              {"cpu": count * 1000}),))


FLAVORS = {"spot": FlavorConfig("spot", {"pool": "spot"},
                                tolerations=(api.Toleration.model_validate(SPOT_TOLERATION),)),
           "gpu": FlavorConfig("gpu", {"gpu": "a100"})}


class TestQueue:
    @pytest.mark.parametrize(("labels", "default_queue", "exists", "want"), [
        ({"kuota.dev/queue-name": "q"}, False, False, "q"),
        ({"kueue.x-k8s.io/queue-name": "kq"}, False, False, "kq"),
        ({"kuota.dev/queue-name": "q", "kueue.x-k8s.io/queue-name": "kq"}, False, False, "q"),
        ({}, False, True, None),
        ({}, True, False, None),
        ({}, True, True, "default"),
    ])
    def test_queue_of(self, labels: dict[str, str], default_queue: bool, exists: bool,
                      want: str | None) -> None:
        def queue_exists(namespace: str, name: str) -> bool:
            return exists and (namespace, name) == ("ml", "default")

        got = jobs.queue_of(job(labels=labels), default_queue=default_queue,
                            queue_exists=queue_exists)
        assert got == want


class TestWorkload:
    @pytest.mark.parametrize(("parallelism", "completions", "min_parallelism", "want_count",
                              "want_min"), [
        (None, None, None, 1, None),
        (4, None, None, 4, None),
        (4, 2, None, 2, None),
        (2, 8, None, 2, None),
        (6, None, "3", 6, 3),
        (6, None, "6", 6, None),  # not less than count: no partial admission
        (6, None, "x", 6, None),
    ])
    def test_count_and_min_count(self, parallelism: int | None, completions: int | None,
                                 min_parallelism: str | None, want_count: int,
                                 want_min: int | None) -> None:
        annotations = {} if min_parallelism is None else \
            {"kuota.dev/job-min-parallelism": min_parallelism}
        body = jobs.workload_for(job(parallelism=parallelism, completions=completions,
                                     annotations=annotations),
                                 queue="main", priority=0, priority_class=None)
        pod_set = body["spec"]["podSets"][0]
        assert (pod_set["count"], pod_set.get("minCount")) == (want_count, want_min)

    def test_the_workload_parses_and_sums_requests_like_kubernetes(self) -> None:
        body = jobs.workload_for(job(parallelism=2), queue="main", priority=50,
                                 priority_class="high")
        workload = api.parse_object(body)
        assert isinstance(workload, api.Workload)
        # max(sum of containers 1, largest init container 3) + overhead 0.1
        assert workload.spec.pod_sets[0].pod_requests() == {"cpu": 3100}
        assert workload.spec.priority == 50 and workload.spec.priority_class_name == "high"
        owner = body["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "train", True)
        assert body["metadata"]["name"] == "job-train-abcde"
        assert body["spec"]["podSets"][0]["template"]["metadata"] == {"labels": {"a": "b"}}

    def test_a_started_job_yields_its_original_template(self) -> None:
        running = merge(job(parallelism=4, node_selector={"disk": "ssd"}),
                        jobs.start_patch(job(parallelism=4, node_selector={"disk": "ssd"}),
                                         admission(2), FLAVORS, 4))
        body = jobs.workload_for(running, queue="main", priority=0, priority_class=None)
        pod_set = body["spec"]["podSets"][0]
        assert pod_set["count"] == 4
        assert pod_set["template"]["spec"]["nodeSelector"] == {"disk": "ssd"}
        assert "tolerations" not in pod_set["template"]["spec"]


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies it."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


STARTED_AT = "2026-01-01T00:00:00Z"


def run(body: dict[str, Any], write: jobs.Write | None) -> dict[str, Any]:
    """``body`` after ``write``, as the API server stores it (merge patch, status or not)."""
    assert write is not None
    if write.subresource == "status":
        return dict(body, status=merge(body.get("status") or {}, write.patch["status"]))
    return merge(body, write.patch)


class TestStartAndStop:
    def test_start_injects_flavor_constraints_and_stop_restores(self) -> None:
        before = job(parallelism=4, node_selector={"disk": "ssd"},
                     tolerations=[{"key": "x", "operator": "Exists"}])
        write = jobs.start_write(before, admission(2), FLAVORS, 4)
        assert write is not None and write.step == "start"
        started = run(before, write)
        pod = started["spec"]["template"]["spec"]
        assert started["spec"]["suspend"] is False
        assert started["spec"]["parallelism"] == 2  # partial admission
        assert pod["nodeSelector"] == {"disk": "ssd", "pool": "spot"}
        assert pod["tolerations"] == [{"key": "x", "operator": "Exists"}, SPOT_TOLERATION]
        saved = json.loads(started["metadata"]["annotations"][names.ORIGINAL_ANNOTATION])
        assert saved["parallelism"] == 4
        assert jobs.start_write(started, admission(2), FLAVORS, 4) is None  # idempotent

        suspended = run(started, jobs.stop_write(started))
        assert suspended["spec"]["suspend"] is True
        assert suspended["spec"]["template"] == started["spec"]["template"]  # not yet
        stopped = run(suspended, jobs.stop_write(suspended))
        assert stopped["spec"] == before["spec"]
        assert stopped["metadata"]["annotations"] == {}
        assert jobs.stop_write(stopped) is None

    def test_a_job_that_ran_is_stopped_in_steps_as_its_pods_go(self) -> None:
        """Suspend; wait for the Job controller; clear startTime; restore — then start again
        under another flavor (Kubernetes 1.34 refuses the template change before)."""
        before = job(parallelism=2, node_selector={"disk": "ssd"})
        running = run(before, jobs.start_write(before, admission(2), FLAVORS, 2))
        running["status"] = {"startTime": STARTED_AT, "active": 2}
        steps = []

        def step(current: dict[str, Any]) -> dict[str, Any]:
            write = jobs.stop_write(current)
            steps.append(write.step if write else None)
            return run(current, write) if write else current

        current = step(running)
        current = step(current)  # the Job controller has not deleted the pods yet
        current = step(dict(current, status={"startTime": STARTED_AT, "terminating": 2}))
        current = step(dict(current, status={"startTime": STARTED_AT}))  # gone
        current = step(step(current))
        assert steps == ["suspend", None, None, "reset", "restore", None]
        assert current["spec"] == before["spec"] and "startTime" not in current["status"]
        again = run(current, jobs.start_write(current, admission(2, {"cpu": "gpu"}), FLAVORS, 2))
        assert again["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd",
                                                                     "gpu": "a100"}

    @pytest.mark.parametrize(("suspend", "status", "touched", "want_step"), [
        (False, {}, True, "suspend"),
        (False, {"startTime": STARTED_AT, "active": 2}, False, "suspend"),
        (True, {"startTime": STARTED_AT, "active": 2}, True, None),  # pods still running
        (True, {"startTime": STARTED_AT, "terminating": 1}, True, None),  # still dying
        (True, {"startTime": STARTED_AT}, True, "reset"),
        (True, {}, True, "restore"),
        (True, {"startTime": STARTED_AT}, False, None),  # never started by kuota
        (True, {}, False, None),
    ])
    def test_the_next_stop_step(self, suspend: bool, status: dict[str, Any], touched: bool,
                                want_step: str | None) -> None:
        body = job(suspend=suspend, annotations={
            names.ADMISSION_ANNOTATION: "team;main:1:cpu=spot"} if touched else {})
        body["status"] = status
        write = jobs.stop_write(body)
        assert (write.step if write else None) == want_step

    @pytest.mark.parametrize(("suspend", "status", "want_step"), [
        (True, {}, "start"),
        (True, {"startTime": STARTED_AT}, "reset"),  # ran before: clear its startTime first
        (True, {"startTime": STARTED_AT, "active": 1}, None),  # its last pods still run
        (False, {}, "suspend"),  # unsuspended by someone else: its template is locked
    ])
    def test_the_next_start_step(self, suspend: bool, status: dict[str, Any],
                                 want_step: str | None) -> None:
        body = dict(job(suspend=suspend), status=status)
        write = jobs.start_write(body, admission(1), FLAVORS, 1)
        assert (write.step if write else None) == want_step

    @pytest.mark.parametrize(("suspend", "status", "want"), [
        (True, {}, True),
        (True, {"active": 0, "terminating": 0}, True),
        (True, {"active": 1}, False),
        (True, {"terminating": 2}, False),
        (False, {}, False),
    ])
    def test_stopped(self, suspend: bool, status: dict[str, int], want: bool) -> None:
        assert jobs.stopped(dict(job(suspend=suspend), status=status)) is want

    def test_a_job_asking_for_topology_labels_its_pods_while_it_runs(self) -> None:
        before = job(parallelism=2)
        before["spec"]["template"]["metadata"]["annotations"] = {
            "kueue.x-k8s.io/podset-required-topology": "rack"}
        started = run(before, jobs.start_write(before, admission(2), FLAVORS, 2))
        assert started["spec"]["template"]["metadata"]["labels"] == \
            {"a": "b", names.TOPOLOGY_LABEL: "true"}
        suspended = run(started, jobs.stop_write(started))
        stopped = run(suspended, jobs.stop_write(suspended))
        assert stopped["spec"]["template"]["metadata"] == before["spec"]["template"]["metadata"]
        plain = run(job(), jobs.start_write(job(), admission(1), FLAVORS, 1))
        assert plain["spec"]["template"]["metadata"]["labels"] == {"a": "b"}

    def test_flavors_of_every_resource_are_combined(self) -> None:
        both = admission(1, {"cpu": "spot", "nvidia.com/gpu": "gpu"})
        started = merge(job(), jobs.start_patch(job(), both, FLAVORS, 1))
        assert started["spec"]["template"]["spec"]["nodeSelector"] == \
            {"pool": "spot", "gpu": "a100"}
        assert "parallelism" in started["spec"] and started["spec"]["parallelism"] == 1

    def test_a_job_running_without_admission_is_suspended(self) -> None:
        write = jobs.stop_write(job(suspend=False))
        assert write == jobs.Write("suspend", {"spec": {"suspend": True}})


class TestJobState:
    @pytest.mark.parametrize(("conditions", "want"), [
        ([], None),
        ([{"type": "Complete", "status": "True"}], "Succeeded"),
        ([{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}], "Failed"),
        ([{"type": "Failed", "status": "False"}], None),
    ])
    def test_finished(self, conditions: list[dict[str, str]], want: str | None) -> None:
        got = jobs.finished(dict(job(), status={"conditions": conditions}))
        assert (got[0] if got else None) == want

    @pytest.mark.parametrize(("suspend", "status", "want"), [
        (False, {"ready": 3}, True),
        (False, {"ready": 1, "succeeded": 2}, True),
        (False, {"ready": 2}, False),
        (True, {"ready": 3}, False),
    ])
    def test_pods_ready(self, suspend: bool, status: dict[str, int], want: bool) -> None:
        assert jobs.pods_ready(dict(job(parallelism=3, suspend=suspend), status=status)) is want
