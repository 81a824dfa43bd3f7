"""The pool copy of a Job and its status going home (pure): kuota.federation.pool_copy and
kuota.service.dispatched_spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kuota.federation.pool_copy import PoolCopyError, from_job, job_status, refusal
from kuota.federation.remote_job import ORIGIN_WORKLOAD_ANNOTATION
from kuota.service.dispatched_spec import DispatchedSpec, SpecError, admission
from queueing.store import Outcome, WorkloadRecord
from quota.lifecycle import State

Body = dict[str, Any]


def job(*, container: Body | None = None, parallelism: int | None = 2,
        backoff_limit: int | None = None) -> Body:
    c: Body = {"name": "main", "command": ["python", "-c"], "args": ["print(1)"],
               "env": [{"name": "A", "value": "x"}],
               "resources": {"requests": {"cpu": "500m"}}}
    spec: Body = {"template": {"spec": {"containers": [container if container is not None
                                                        else c],
                                        "nodeSelector": {"pool": "yes"}}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    return {"metadata": {"name": "train", "namespace": "ml",
                         "annotations": {ORIGIN_WORKLOAD_ANNOTATION: "ml/job-train"}},
            "spec": spec}


def test_from_job_carries_pods_command_constraints_and_limits() -> None:
    key, spec = from_job(job(), origin="mgr", pool="gpus", member="p")
    assert key == "ml/train"
    assert (spec.origin, spec.workload, spec.member, spec.pool) == ("mgr", "ml/job-train", "p",
                                                                     "gpus")
    assert spec.pods == 2 and spec.backoff_limit == 6  # Kubernetes' default
    (ps,) = spec.pod_sets
    assert ps.command() == (("python", "-c", "print(1)"), {"A": "x"})
    assert ps.requirements().node_selector == {"pool": "yes"}
    assert ps.requests() == {"cpu": 500}
    assert DispatchedSpec.from_dict(spec.to_dict()) == spec
    stored = admission(spec)
    assert stored.cluster_queue == "" and stored.pod_sets[0].usage == {"cpu": 1000}


@dataclass
class Bad:
    name: str
    container: Body | None = None
    want_error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


BAD = [
    Bad("no command", {"name": "main", "image": "busybox"}, "command is required"),
    Bad("args only", {"name": "main", "args": ["x"]}, "command is required"),
    Bad("env from a secret", {"name": "m", "command": ["x"],
                              "env": [{"name": "T", "valueFrom": {"secretKeyRef": {}}}]},
        "valueFrom cannot be resolved"),
    Bad("zero pods", None, "parallelism must be a positive", {"parallelism": 0}),
    Bad("negative backoff", None, "backoffLimit must be", {"backoff_limit": -1}),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_jobs_a_pool_cannot_run_are_refused_with_the_field(case: Bad) -> None:
    with pytest.raises(PoolCopyError, match=case.want_error) as err:
        from_job(job(container=case.container, **case.extra), origin="m", pool="g",
                 member="p")
    assert "Job ml/train" in str(err.value)


def test_refusal_says_why_a_job_cannot_run_on_any_pool() -> None:
    assert refusal(job()) is None
    why = refusal(job(container={"name": "main", "image": "busybox"}))
    assert why is not None and "containers[0].command is required" in why


def test_a_malformed_stored_spec_names_the_field() -> None:
    doc = from_job(job(), origin="m", pool="g", member="p")[1].to_dict()
    doc["podSets"][0]["count"] = "two"
    with pytest.raises(SpecError, match=r"podSets\[0\].count"):
        DispatchedSpec.from_dict(doc)


@dataclass
class StatusCase:
    name: str
    record: WorkloadRecord
    want_active: int
    #: As a 1.31+ Job controller writes them: the interim condition, then the terminal one.
    want_conditions: tuple[str, ...]
    want_succeeded: int = 0
    want_failed: int = 0


def record(**fields: Any) -> WorkloadRecord:
    base: dict[str, Any] = {"key": "ml/train", "state": State.ADMITTED, "pods": 2,
                            "admitted_at": 100.0, "origin": "mgr"}
    base.update(fields)
    return WorkloadRecord(**base)


STATUS = [
    StatusCase("waiting for nodes", record(), 0, ()),
    StatusCase("running", record(placement=("n1", "n1"), pods_done=1), 2, (),
               want_succeeded=1),
    StatusCase("succeeded", record(state=State.FINISHED, outcome=Outcome.SUCCEEDED,
                                   finished_at=200.0, pods_done=2), 0,
               ("SuccessCriteriaMet", "Complete"),
               want_succeeded=2),
    StatusCase("failed after a retry", record(state=State.FINISHED, outcome=Outcome.FAILED,
                                              failures=1, reason="BackoffLimitExceeded",
                                              message="pod 0 exited 3", finished_at=200.0),
               0, ("FailureTarget", "Failed"), want_failed=2),
    StatusCase("cancelled here", record(state=State.FINISHED, outcome=Outcome.CANCELLED,
                                        reason="Cancelled", finished_at=200.0), 0,
               ("FailureTarget", "Failed")),
]


@pytest.mark.parametrize("case", STATUS, ids=lambda c: c.name)
def test_job_status_of_a_pool_copy(case: StatusCase) -> None:
    spec = from_job(job(), origin="mgr", pool="gpus", member="p")[1]
    status = job_status(case.record, spec)["status"]
    assert status["active"] == case.want_active
    assert status["succeeded"] == case.want_succeeded
    assert status["failed"] == case.want_failed
    conditions = [c["type"] for c in status.get("conditions", [])]
    assert tuple(conditions) == case.want_conditions
    if "Failed" in conditions:
        assert all(c["message"].startswith("on pool gpus: ") for c in status["conditions"])
    assert ("completionTime" in status) == ("Complete" in conditions)
    if conditions:
        assert status["startTime"] == "1970-01-01T00:01:40Z"
