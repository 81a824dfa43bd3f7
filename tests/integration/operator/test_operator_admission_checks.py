"""Admission checks: quota is reserved, an outside controller's verdict admits or retries."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"


def checked_queue(api: Emulator) -> None:
    cq = h.cluster_queue("team", quotas={"default": {"cpu": 2}},
                         admissionChecksStrategy={"admissionChecks": [{"name": "provision"}]})
    api.apply(h.flavor("default"), cq, h.local_queue("main", "team"),
              {"apiVersion": h.API, "kind": "AdmissionCheck", "metadata": {"name": "provision"},
               "spec": {"controllerName": "example.com/provisioner"}})


def verdict(api: Emulator, job: str, state: str) -> None:
    """Play the check's controller: write its verdict into the Workload's status."""
    wl = h.workload_of(api, job)
    assert wl is not None
    checks = [dict(c, state=state, message=f"provisioner says {state}")
              for c in wl["status"]["admissionChecks"]]
    api.patch(h.API, "Workload", wl["metadata"]["name"], {"status": {"admissionChecks": checks}},
              namespace="default", subresource="status")


def reserved(api: Emulator, job: str) -> dict[str, Any] | None:
    wl = h.workload_of(api, job)
    ok = wl and h.is_true(wl, "QuotaReserved") and (wl.get("status") or {}).get("admissionChecks")
    return wl if ok else None


@pytest.mark.parametrize(("state", "want_running", "want_active"), [
    ("Ready", True, True),
    ("Rejected", False, False),
])
def test_a_check_verdict_decides(cluster: Emulator, certs: pathlib.Path, state: str,
                                 want_running: bool, want_active: bool) -> None:
    checked_queue(cluster)
    with h.Running(cluster, certs):
        call(cluster.url, "POST", JOBS, h.job("j"))
        wl = h.wait(cluster, lambda: reserved(cluster, "j"), "the quota reservation")
        assert not h.is_true(wl, "Admitted")
        assert [(c["name"], c["state"]) for c in wl["status"]["admissionChecks"]] == \
            [("provision", "Pending")]
        assert not h.running(cluster, "j")
        verdict(cluster, "j", state)
        if want_running:
            h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
            assert h.is_true(h.workload_of(cluster, "j"), "Admitted")
        else:
            h.wait(cluster, lambda: h.is_true(h.workload_of(cluster, "j"), "Evicted"),
                   "the Workload to be deactivated")
            h.wait(cluster, lambda: h.workload_of(cluster, "j")["spec"].get("active") is False,
                   "spec.active false")
            assert not h.running(cluster, "j")


def test_retry_releases_the_quota_and_reserves_again(cluster: Emulator,
                                                     certs: pathlib.Path) -> None:
    checked_queue(cluster)
    with h.Running(cluster, certs):
        call(cluster.url, "POST", JOBS, h.job("j"))
        h.wait(cluster, lambda: reserved(cluster, "j"), "the quota reservation")
        verdict(cluster, "j", "Retry")

        def reserved_again() -> bool:
            wl = reserved(cluster, "j")
            evicted = [e for e in cluster.list("v1", "Event", "default")
                       if e["reason"] == "Evicted" and "AdmissionCheck" in e["message"]]
            return bool(wl and evicted
                        and wl["status"]["admissionChecks"][0]["state"] == "Pending")

        h.wait(cluster, reserved_again, "a second reservation with the check pending again")
        verdict(cluster, "j", "Ready")
        h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
