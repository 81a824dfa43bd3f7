"""Submissions are checked before anything is stored; every problem names its field."""

from __future__ import annotations

import pytest

from kuota.service import submission
from quota import api


def check(**overrides: object) -> submission.Submission:
    args: dict[str, object] = {"queue": "team/lq", "name": "job", "requests": {"cpu": 1}}
    args.update(overrides)
    command = args.pop("command", ["python", "train.py"])
    manifest = submission.from_args(command, **args)  # type: ignore[arg-type]
    return submission.check(manifest, {"high": 100})


def problems(**overrides: object) -> list[tuple[str, str]]:
    with pytest.raises(api.ObjectError) as caught:
        check(**overrides)
    return [(p.field, p.message) for p in caught.value.problems]


def test_a_good_submission() -> None:
    ok = check(count=2, requests={"cpu": "500m"}, priority_class="high", backoff_limit=3,
               env={"A": "1"})
    assert (ok.key, ok.queue, ok.priority, ok.backoff_limit) == ("team/job", "team/lq", 100, 3)
    container = ok.manifest["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "train.py"]
    assert container["env"] == [{"name": "A", "value": "1"}]


@pytest.mark.parametrize(("overrides", "want_field", "want_text"), [
    ({"queue": "lq-without-namespace/"}, "queue", "is not NAMESPACE/LOCALQUEUE"),
    ({"command": []}, "command", "a command to run is required"),
    ({"name": "other/job"}, "metadata.namespace", "the queue is in namespace team"),
    ({"priority_class": "low"}, "spec.priorityClassRef.name", "WorkloadPriorityClass low does"),
    ({"backoff_limit": -1}, "metadata.annotations[kuota.dev/backoff-limit]", "whole number"),
    ({"requests": {"cpu": "x"}}, "spec.podSets[0].template.spec.containers[0].resources."
                                 "requests.cpu", "not a quantity"),
    # Issue 12: each of these was accepted and then broke the scheduler or hung a pod.
    ({"count": 0}, "spec.podSets[0].count", "must be at least 1"),
    ({"count": 10_001}, "spec.podSets", "a pool runs at most 10000 pods"),
    ({"requests": {"cpu": "1e5000"}}, "spec.podSets[0].template.spec.containers[0].resources."
                                      "requests.cpu", "too large"),
    ({"requests": {"cpu": "NaN"}}, "spec.podSets[0].template.spec.containers[0].resources."
                                   "requests.cpu", "not a finite quantity"),
    ({"command": ["echo", "a\0b"]}, "spec.podSets[0].template.spec.containers[0].command[1]",
     "NUL byte"),
    ({"env": {"A": "x\0y"}}, "spec.podSets[0].template.spec.containers[0].env[0].value",
     "NUL byte"),
    ({"env": {"A=B": "1"}}, "spec.podSets[0].template.spec.containers[0].env[0].name",
     "contains '='"),
    ({"env": {"": "1"}}, "spec.podSets[0].template.spec.containers[0].env[0].name",
     "must not be empty"),
    ({"env": {"T\tAB": "1"}}, "spec.podSets[0].template.spec.containers[0].env[0].name",
     "printable ASCII"),
])
def test_each_mistake_is_named(overrides: dict[str, object], want_field: str,
                               want_text: str) -> None:
    [(field, message)] = problems(**overrides)
    assert field == want_field
    assert want_text in message


def test_generated_names_follow_the_command() -> None:
    name = check(name=None, command=["/usr/bin/My_Tool.sh"]).key.split("/")[1]
    assert name.startswith("my-tool-sh-") and len(name) == len("my-tool-sh-") + 6


# -- requests always mean something (issue 12, scope 3) ---------------------------------------

REQUESTS_FIELD = "spec.podSets[0].template.spec.containers[0].resources.requests"


@pytest.mark.parametrize(("requests", "defaults", "want_requests", "want_problem"), [
    # Issue 12: six request-less jobs ran at once on a queue showing cpu=0/2.
    (None, None, None, "give requests (kuota submit --requests cpu=1"),
    ({"cpu": 0}, None, None, "requests nothing"),
    (None, {"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}, None),
    ({"cpu": "500m"}, {"cpu": "2"}, {"cpu": "500m"}, None),
])
def test_a_submission_without_requests_gets_the_queue_default_or_is_refused(
        requests: dict[str, object] | None, defaults: dict[str, str] | None,
        want_requests: dict[str, str] | None, want_problem: str | None) -> None:
    manifest = submission.from_args(["train"], queue="team/lq", name="job",
                                    requests=requests)  # type: ignore[arg-type]
    default_requests = {"team/lq": defaults} if defaults else {}
    if want_problem is not None:
        with pytest.raises(api.ObjectError) as caught:
            submission.check(manifest, {}, default_requests=default_requests)
        [problem] = caught.value.problems
        assert (problem.field, want_problem in problem.message) == (REQUESTS_FIELD, True)
        return
    ok = submission.check(manifest, {}, default_requests=default_requests)
    container = ok.manifest["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == want_requests


def test_the_default_of_another_queue_does_not_apply() -> None:
    manifest = submission.from_args(["train"], queue="team/lq", name="job")
    with pytest.raises(api.ObjectError):
        submission.check(manifest, {}, default_requests={"team/other": {"cpu": "1"}})


# -- the pod spec is honoured or refused (issue 12, scope 6) -----------------------------------

def _edited(edit: dict[str, object], *, pod_spec: bool = False) -> list[tuple[str, str]]:
    manifest = submission.from_args(["train"], queue="team/lq", name="job",
                                    requests={"cpu": 1})
    spec = manifest["spec"]["podSets"][0]["template"]["spec"]
    (spec if pod_spec else spec["containers"][0]).update(edit)
    with pytest.raises(api.ObjectError) as caught:
        submission.check(manifest, {})
    return [(p.field, p.message) for p in caught.value.problems]


CONTAINER = "spec.podSets[0].template.spec.containers[0]"


@pytest.mark.parametrize(("edit", "pod_spec", "want_field"), [
    ({"image": "python:3.12"}, False, f"{CONTAINER}.image"),
    ({"volumeMounts": [{"name": "data", "mountPath": "/data"}]}, False,
     f"{CONTAINER}.volumeMounts"),
    ({"envFrom": [{"secretRef": {"name": "s"}}]}, False, f"{CONTAINER}.envFrom"),
    ({"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
     False, f"{CONTAINER}.env[0].valueFrom"),
    ({"volumes": [{"name": "data", "emptyDir": {}}]}, True,
     "spec.podSets[0].template.spec.volumes"),
    ({"initContainers": [{"name": "init", "command": ["true"]}]}, True,
     "spec.podSets[0].template.spec.initContainers"),
])
def test_fields_a_pool_cannot_honour_are_refused_by_name(
        edit: dict[str, object], pod_spec: bool, want_field: str) -> None:
    [(field, message)] = _edited(edit, pod_spec=pod_spec)
    assert field == want_field
    assert "cannot be honoured: a worker pool runs the first container's command" in message


def test_a_second_container_is_refused() -> None:
    problems = _edited({"containers": [{"name": "a", "command": ["a"],
                                        "resources": {"requests": {"cpu": "1"}}},
                                       {"name": "b", "command": ["b"]}]}, pod_spec=True)
    assert problems[0] == ("spec.podSets[0].template.spec.containers",
                           "more than one container cannot be honoured: a worker pool runs "
                           "the first container's command as a process on its node, with no "
                           "image, volumes or other containers")


def test_working_dir_is_kept_for_the_pod() -> None:
    manifest = submission.from_args(["train"], queue="team/lq", name="job",
                                    requests={"cpu": 1})
    manifest["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["workingDir"] = "/srv"
    obj = api.parse_object(submission.check(manifest, {}).manifest, source="t")
    from kuota.service import jobs
    assert isinstance(obj, api.Workload)
    assert jobs.working_dir(obj, "main") == "/srv"
