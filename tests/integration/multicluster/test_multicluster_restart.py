"""A restarted operator takes over the workloads its predecessor dispatched: it finds their
copies again (no second copy), counts what their pods use on the member, and dispatches the
reservation that was still waiting for a member once the capacity frees."""

from __future__ import annotations

from typing import Any

from tests.integration.multicluster.fleet import ORIGIN, Fleet
from tests.integration.operator import harness as h

DATA = {"kuota.dev/datasets": "local-data"}  # only member a has it


def running_pod(job: dict[str, Any], node: str, cpu: str) -> dict[str, Any]:
    """The pod the member's Job controller and scheduler would make for a copy."""
    meta = job["metadata"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{meta['name']}-0", "namespace": meta["namespace"],
                         "labels": {ORIGIN: "manager-1", "job-name": meta["name"]},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                              "name": meta["name"], "uid": meta["uid"],
                                              "controller": True}]},
            "spec": {"nodeName": node,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"}}


def free_cpu(fleet: Fleet, member: str) -> str:
    free = {c["name"]: c["resources"] for c in fleet.member_status(member)["freeCapacity"]}
    return str(free["cpu"]["cpu"])


def check_state(fleet: Fleet, name: str) -> str:
    found = h.workload_of(fleet.manager, name) or {}
    checks = found.get("status", {}).get("admissionChecks") or []
    return next((c["state"] for c in checks if c["name"] == "dispatch"), "")


class TestRestart:
    def test_the_new_leader_counts_running_copies_and_dispatches_the_waiting_one(
            self, own_fleet: Fleet) -> None:
        fleet = own_fleet
        fleet.set_members(a={"datasets": ["local-data"]})
        h.wait(fleet.manager, lambda: fleet.manager.get(h.API, "MemberCluster", "a")
               ["spec"]["datasets"], "the datasets stored")
        h.settle(0.3)
        fleet.submit(h.job("running", cpu="6", annotations=DATA))
        assert fleet.placed("running") == "a"
        copy = fleet.copy("a", "running")
        assert copy is not None
        fleet.a.create(running_pod(copy, "a-1", "6"))
        # Two 6-cpu pods: a-1 has 2 cpu left, a-2 8, so this one waits for "running".
        fleet.submit(h.job("waiting", cpu="6", parallelism=2, annotations=DATA))
        h.wait(fleet.manager, lambda: check_state(fleet, "waiting") == "Pending",
               "the waiting one's check Pending")
        h.wait(fleet.manager, lambda: free_cpu(fleet, "a") == "10", "a's free cpu 10", 5)

        fleet.restart_operator()
        h.wait(fleet.manager, lambda: h.is_true({"status": fleet.member_status("a")}, "Active"),
               "a Active under the new leader")
        h.settle(1.0)
        # The new leader sees the running copy's pod: a is as full as before, the waiting
        # workload is still waiting, and the copy is the one made before the restart.
        assert free_cpu(fleet, "a") == "10"
        assert fleet.copies("waiting") == {}
        assert check_state(fleet, "waiting") == "Pending"
        again = fleet.copy("a", "running")
        assert again is not None and again["metadata"]["uid"] == copy["metadata"]["uid"]
        assert fleet.copies("running").keys() == {"a"}

        fleet.a.patch("v1", "Pod", "running-0", {"status": {"phase": "Succeeded"}},
                      namespace="default", subresource="status")
        fleet.finish("a", "running")
        assert fleet.placed("waiting", timeout=10) == "a"
        h.wait(fleet.manager, lambda: h.is_true(fleet.workload("running"), "Finished"),
               "the running one finished")
