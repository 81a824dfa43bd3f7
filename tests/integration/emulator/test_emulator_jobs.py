"""Jobs as the real API server (1.32+) checks them: ``spec.managedBy`` and the status rules.

One case per rule of ``pkg/apis/batch/validation`` that a controller copying a
status home can trip over. Every status case runs for a Job the built-in Job
controller runs (no ``managedBy``, or its own name) and for one an external
controller manages: the server holds both to the same rules — ``managedBy``
only decides which controller writes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.emulator import MERGE_PATCH, Emulator
from tests.emulator.clients import call
from tests.emulator.jobs import JOB_CONTROLLER
from tests.emulator.samples import finished_job_status

JOBS = "/apis/batch/v1/namespaces/default/jobs"
T0, T1, T2 = "2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"
EXTERNAL = "kuota.dev/multicluster"
_names = itertools.count()


@pytest.fixture(scope="module")
def api() -> Iterator[Emulator]:
    with Emulator() as emulator:
        yield emulator
        errors = emulator.unexpected_errors
    assert not errors, errors


def job(name: str, *, managed_by: str | None = None, suspend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"suspend": suspend, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}
    if managed_by is not None:
        spec["managedBy"] = managed_by
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def condition(kind: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "R", "message": "m",
            "lastTransitionTime": T1}


SUCCEEDED = [condition("SuccessCriteriaMet"), condition("Complete")]
FAILED = [condition("FailureTarget"), condition("Failed")]


class TestManagedBy:
    @pytest.mark.parametrize(("value", "want_status", "want_message"), [
        (JOB_CONTROLLER, 201, ""),
        (EXTERNAL, 201, ""),
        ("multicluster", 422, "must be a domain-prefixed path"),
        ("kuota.dev/", 422, "must be a domain-prefixed path"),
        ("Kuota.Dev/x", 422, "RFC 1123 subdomain"),
        ("kuota.dev/" + "x" * 60, 422, "may not be more than 63 bytes"),
    ])
    def test_the_value_is_a_domain_prefixed_path(self, api: Emulator, value: str,
                                                 want_status: int, want_message: str) -> None:
        reply = call(api.url, "POST", JOBS, job(f"m{next(_names)}", managed_by=value))
        assert reply.status == want_status, reply.data
        if want_message:
            assert want_message in reply.data["message"]

    @pytest.mark.parametrize(("before", "after", "want_status"), [
        (None, EXTERNAL, 422),
        (EXTERNAL, None, 422),
        (EXTERNAL, "other.io/x", 422),
        (EXTERNAL, EXTERNAL, 200),
    ])
    def test_it_is_immutable(self, api: Emulator, before: str | None, after: str | None,
                             want_status: int) -> None:
        name = f"m{next(_names)}"
        assert call(api.url, "POST", JOBS, job(name, managed_by=before)).status == 201
        reply = call(api.url, "PATCH", f"{JOBS}/{name}", {"spec": {"managedBy": after}},
                     content_type=MERGE_PATCH)
        assert reply.status == want_status, reply.data
        if want_status == 422:
            assert "spec.managedBy" in reply.data["message"]
            assert "field is immutable" in reply.data["message"]


#: (case, stored status, merge patch of the status, suspended Job, why it is refused or "").
STATUS_CASES = [
    ("complete after success criteria", {"startTime": T0},
     {"succeeded": 1, "completionTime": T1, "conditions": SUCCEEDED}, False, ""),
    ("complete without success criteria", {"startTime": T0},
     {"succeeded": 1, "completionTime": T1, "conditions": [condition("Complete")]}, False,
     "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"),
    ("complete without completionTime", {"startTime": T0},
     {"succeeded": 1, "conditions": SUCCEEDED}, False,
     "completionTime is required for Complete jobs"),
    ("completionTime without complete", {"startTime": T0}, {"completionTime": T1}, False,
     "cannot set completionTime when there is no Complete=True condition"),
    ("completionTime before startTime", {"startTime": T1},
     {"completionTime": T0, "conditions": SUCCEEDED}, False,
     "must be equal to or after `startTime`"),
    ("finished without startTime", {},
     {"completionTime": T1, "conditions": SUCCEEDED}, False,
     "startTime is required for finished job"),
    ("failed after failure target", {"startTime": T0},
     {"failed": 1, "conditions": FAILED}, False, ""),
    ("failed without failure target", {"startTime": T0},
     {"failed": 1, "conditions": [condition("Failed")]}, False,
     "cannot set Failed=True condition without the FailureTarget=true condition"),
    ("failed with completionTime", {"startTime": T0},
     {"failed": 1, "completionTime": T1, "conditions": FAILED}, False,
     "cannot set completionTime when there is no Complete=True condition"),
    ("finished with active pods", {"startTime": T0, "active": 2, "ready": 0},
     {"completionTime": T1, "conditions": SUCCEEDED}, False,
     "active>0 is invalid for finished job"),
    ("finished with terminating pods", {"startTime": T0, "terminating": 1},
     {"completionTime": T1, "conditions": SUCCEEDED}, False,
     "terminating>0 is invalid for finished job"),
    ("finished with uncounted pods",
     {"startTime": T0, "uncountedTerminatedPods": {"succeeded": ["u1"]}},
     {"completionTime": T1, "conditions": SUCCEEDED}, False,
     "must be empty for finished job"),
    ("success criteria with failure target", {"startTime": T0},
     {"conditions": [condition("SuccessCriteriaMet"), condition("FailureTarget")]}, False,
     "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"),
    ("complete and failed", {"startTime": T0},
     {"completionTime": T1, "conditions": SUCCEEDED + FAILED}, False,
     "cannot set Complete=True and Failed=true conditions"),
    ("more ready than active", {"startTime": T0}, {"active": 1, "ready": 2}, False,
     "cannot set more ready pods than active"),
    ("negative count", {}, {"active": -1}, False, "must be greater than or equal to 0"),
    ("failed count decreases", {"startTime": T0, "failed": 2}, {"failed": 1}, False,
     "cannot decrease the failed counter"),
    ("succeeded count decreases", {"startTime": T0, "succeeded": 2}, {"succeeded": 1}, False,
     "cannot decrease the succeeded counter"),
    ("terminal condition removed", finished_job_status(started=T0, ended=T1),
     {"conditions": []}, False, "cannot disable the terminal Complete=True condition"),
    ("completionTime changed", finished_job_status(started=T0, ended=T1),
     {"completionTime": T2}, False, "field is immutable"),
    ("startTime changed while running", {"startTime": T0}, {"startTime": T1}, False,
     "field is immutable for unsuspended job once set"),
    ("startTime changed while suspended", {"startTime": T0}, {"startTime": T1}, True, ""),
    ("counts and progress", {"startTime": T0},
     {"active": 3, "ready": 2, "succeeded": 1, "failed": 1}, False, ""),
]


class TestStatusRules:
    @pytest.mark.parametrize("managed_by", [None, JOB_CONTROLLER, EXTERNAL])
    @pytest.mark.parametrize(("case", "stored", "patch", "suspend", "want_refusal"),
                             STATUS_CASES, ids=[c[0] for c in STATUS_CASES])
    def test_a_status_write(self, api: Emulator, managed_by: str | None, case: str,
                            stored: dict[str, Any], patch: dict[str, Any], suspend: bool,
                            want_refusal: str) -> None:
        name = f"s{next(_names)}"
        assert call(api.url, "POST", JOBS, job(name, managed_by=managed_by,
                                               suspend=suspend)).status == 201
        if stored:
            api.patch("batch/v1", "Job", name, {"status": stored}, namespace="default",
                      subresource="status")
        before = api.get("batch/v1", "Job", name, "default")
        reply = call(api.url, "PATCH", f"{JOBS}/{name}/status", {"status": patch},
                     content_type=MERGE_PATCH)
        if not want_refusal:
            assert reply.status == 200, reply.data
            return
        assert reply.status == 422, reply.data
        assert want_refusal in reply.data["message"]
        assert reply.data["message"].startswith(f'Job.batch "{name}" is invalid: ')
        assert "status." in reply.data["message"]
        assert api.get("batch/v1", "Job", name, "default") == before  # nothing changed

    def test_a_seeded_status_is_checked_too(self, api: Emulator) -> None:
        name = f"s{next(_names)}"
        api.create(job(name))
        with pytest.raises(Exception, match="without the SuccessCriteriaMet"):
            api.patch("batch/v1", "Job", name, {"status": {
                "startTime": T0, "completionTime": T1, "conditions": [condition("Complete")]}},
                namespace="default", subresource="status")

    def test_a_write_to_the_main_resource_does_not_check_status(self, api: Emulator) -> None:
        name = f"s{next(_names)}"
        api.create(job(name))
        reply = call(api.url, "PATCH", f"{JOBS}/{name}",
                     {"metadata": {"labels": {"x": "y"}},
                      "status": {"conditions": [condition("Complete")]}},
                     content_type=MERGE_PATCH)
        assert reply.status == 200 and "conditions" not in (reply.data.get("status") or {})
