"""A member's Job status copied home: what is written, and that the API server accepts it.

Every patch is also applied to the local Job and checked with the emulator's
copy of the Job registry's status rules (``tests/emulator/jobs.py``, taken from
the Kubernetes 1.34 and 1.36 sources), so a status the real server would
refuse fails here first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kuota.federation.job_status import status_patch
from kuota.federation.managed_by import JOB_CONTROLLER, MANAGED_BY
from tests.emulator import jobs as server_rules
from tests.emulator.patches import merge_patch

Body = dict[str, Any]
T0, T1, T2, NOW = ("2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z",
                   "2025-01-01T00:09:00Z")


def condition(kind: str, at: str | None = T1, **extra: Any) -> Body:
    found: Body = {"type": kind, "status": "True", "reason": "R", "message": "m", **extra}
    if at is not None:
        found["lastTransitionTime"] = at
    return found


def local_job(status: Body | None = None, *, managed_by: str | None = MANAGED_BY,
              suspend: bool = True) -> Body:
    spec: Body = {"suspend": suspend, "parallelism": 2, "completions": 2,
                  "template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}
    if managed_by is not None:
        spec["managedBy"] = managed_by
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "ml"}, "spec": spec,
            "status": status or {}}


@dataclass(frozen=True)
class Case:
    name: str
    remote: Body
    want: Body | None
    ours: Body = field(default_factory=dict)
    managed_by: str | None = MANAGED_BY
    suspend: bool = True


FINISHED_ZEROS = {"active": 0, "ready": 0}

CASES = [
    Case("nothing yet", {}, None),
    Case("running: progress goes home",
         {"active": 2, "ready": 1, "startTime": T0},
         {"active": 2, "ready": 1, "startTime": T0}),
    Case("running: ready never exceeds active",
         {"active": 1, "ready": 3, "startTime": T0}, {"active": 1, "ready": 1, "startTime": T0}),
    Case("running: nothing new",
         {"active": 2, "ready": 2, "startTime": T0}, None,
         ours={"active": 2, "ready": 2, "startTime": T0}),
    Case("running on a fresh member: counts never go down",
         {"active": 2, "failed": 0, "succeeded": 0, "startTime": T2},
         {"active": 2, "startTime": T2},
         ours={"active": 0, "failed": 3, "succeeded": 1, "startTime": T0}),
    Case("complete on a 1.31+ member",
         {"succeeded": 2, "startTime": T0, "completionTime": T1,
          "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]},
         {"succeeded": 2, "completionTime": T1, **FINISHED_ZEROS,
          "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]},
         ours={"active": 2, "ready": 2, "startTime": T0}),
    Case("complete on an older member: the interim condition is added",
         {"succeeded": 2, "startTime": T0, "completionTime": T1,
          "conditions": [condition("Complete")]},
         {"succeeded": 2, "startTime": T0, "completionTime": T1, **FINISHED_ZEROS,
          "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]},
         ours={"active": 2, "ready": 1}),
    Case("complete without times: taken from the condition",
         {"succeeded": 2, "conditions": [condition("Complete", at=T2)]},
         {"succeeded": 2, "startTime": T2, "completionTime": T2,
          "conditions": [condition("SuccessCriteriaMet", at=T2), condition("Complete", at=T2)]}),
    Case("complete without any time: now",
         {"succeeded": 2, "conditions": [condition("Complete", at=None)]},
         {"succeeded": 2, "startTime": NOW, "completionTime": NOW,
          "conditions": [condition("SuccessCriteriaMet", at=NOW),
                         condition("Complete", at=NOW)]}),
    Case("complete before it started: startTime moves back",
         {"succeeded": 2, "startTime": T2, "completionTime": T1,
          "conditions": [condition("Complete")]},
         {"succeeded": 2, "startTime": T1, "completionTime": T1,
          "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}),
    Case("failed on an older member or a pool: the interim condition is added",
         {"failed": 1, "startTime": T0, "conditions": [condition("Failed", message="on pool")]},
         {"failed": 1, **FINISHED_ZEROS,
          "conditions": [condition("FailureTarget", message="on pool"),
                         condition("Failed", message="on pool")]},
         ours={"active": 1, "ready": 1, "startTime": T0}),
    Case("failed: never a completionTime",
         {"failed": 7, "startTime": T0, "completionTime": T1,
          "conditions": [condition("FailureTarget"), condition("Failed")]},
         {"failed": 7, "startTime": T0,
          "conditions": [condition("FailureTarget"), condition("Failed")]}),
    Case("finished: leftover pods of the local status are cleared",
         {"succeeded": 2, "startTime": T0, "completionTime": T1,
          "conditions": [condition("Complete")]},
         {"succeeded": 2, "completionTime": T1, "terminating": 0, **FINISHED_ZEROS,
          "uncountedTerminatedPods": {"succeeded": [], "failed": []},
          "conditions": [condition("Suspended"), condition("SuccessCriteriaMet"),
                         condition("Complete")]},
         ours={"active": 1, "ready": 1, "terminating": 1, "startTime": T0,
               "uncountedTerminatedPods": {"failed": ["u1"]},
               "conditions": [condition("Suspended")]}),
    Case("the local Job finished already: nothing more",
         {"failed": 1, "conditions": [condition("Failed")]}, None,
         ours={"succeeded": 2, "startTime": T0, "completionTime": T1,
               "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}),
    Case("run by the manager's Job controller: no running counts (it would undo them)",
         {"active": 2, "ready": 2, "startTime": T0}, None, managed_by=None),
    Case("run by the manager's Job controller, named: the same",
         {"active": 2, "ready": 2, "startTime": T0}, None, managed_by=JOB_CONTROLLER),
    Case("run by the manager's Job controller: the outcome in one write",
         {"succeeded": 2, "startTime": T0, "completionTime": T1,
          "conditions": [condition("Complete")]},
         {"succeeded": 2, "startTime": T0, "completionTime": T1,
          "conditions": [condition("Suspended"), condition("SuccessCriteriaMet"),
                         condition("Complete")]},
         ours={"conditions": [condition("Suspended")]}, managed_by=None),
    Case("an unsuspended local Job keeps its startTime",
         {"succeeded": 2, "startTime": T1, "completionTime": T2,
          "conditions": [condition("Complete")]},
         {"succeeded": 2, "completionTime": T2,
          "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]},
         ours={"startTime": T0}, suspend=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_status_copied_home(case: Case) -> None:
    local = local_job(case.ours, managed_by=case.managed_by, suspend=case.suspend)
    patch = status_patch(local, {"status": case.remote}, now=NOW)
    assert patch == (None if case.want is None else {"status": case.want})
    if patch is not None:
        written = merge_patch(local, patch)
        assert server_rules.problems(written, local) == []


def test_copying_the_same_finished_copy_again_writes_nothing() -> None:
    remote = {"status": {"succeeded": 2, "conditions": [condition("Complete")]}}
    local = local_job()
    first = status_patch(local, remote, now=NOW)
    assert first is not None
    assert status_patch(merge_patch(local, first), remote, now=NOW) is None


def test_the_status_copied_as_it_was_would_be_refused() -> None:
    """Why the status is rebuilt: the member's own status, copied verbatim, is refused."""
    remote = {"succeeded": 2, "startTime": T0, "conditions": [condition("Complete")]}
    local = local_job({"active": 2, "ready": 2})
    verbatim = merge_patch(local, {"status": remote})
    assert server_rules.problems(verbatim, local) != []
