"""Multi-cluster dispatch end to end: a manager and two emulated member clusters.

Each test submits Jobs to the manager and reads where their copies land in
the members; the shared fleet is left as found (every Job finished).
"""

from __future__ import annotations

from kuota.federation.managed_by import MANAGED_BY
from tests.integration.multicluster.fleet import ORIGIN, Fleet, gpu_job
from tests.integration.operator import harness as h


def scores(workload: dict) -> dict[str, dict]:
    return {c["name"]: c for c in workload["status"]["dispatch"]["clusters"]}


class TestChoice:
    def test_gpu_model_only_on_member_b(self, fleet: Fleet) -> None:
        fleet.submit(gpu_job("gpu-train", 2))
        assert fleet.placed("gpu-train") == "b"
        copy = fleet.copy("b", "gpu-train")
        assert copy is not None
        pod = copy["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"gpu-model": "a100"}
        assert copy["spec"]["suspend"] is False
        assert copy["metadata"]["labels"][ORIGIN] == "manager-1"
        assert "kuota.dev/queue-name" not in copy["metadata"]["labels"]
        assert copy["metadata"]["annotations"]["kuota.dev/origin-workload"] == \
            f"default/{fleet.workload('gpu-train')['metadata']['name']}"
        assert h.get_job(fleet.manager, "gpu-train")["spec"]["suspend"] is True
        wl = h.wait(fleet.manager, lambda: (w := fleet.workload("gpu-train"))
                    .get("status", {}).get("dispatch") and w, "the decision in status")
        assert wl["status"]["clusterName"] == "b"
        assert wl["status"]["dispatch"]["cluster"] == "b"
        assert scores(wl)["a"]["filteredBy"] == "Hardware"
        fleet.finish_all("gpu-train")

    def test_data_locality_sends_the_job_where_its_dataset_is(self, fleet: Fleet) -> None:
        fleet.set_members(b={"datasets": ["imagenet-2012"]})
        try:
            h.wait(fleet.manager, lambda: fleet.manager.get(h.API, "MemberCluster", "b")
                   ["spec"]["datasets"], "the datasets stored")
            fleet.submit(h.job("needs-data", annotations={"kuota.dev/datasets": "imagenet-2012"}))
            assert fleet.placed("needs-data") == "b"
            wl = h.wait(fleet.manager, lambda: (w := fleet.workload("needs-data"))
                        .get("status", {}).get("dispatch") and w, "the decision in status")
            assert scores(wl)["a"]["filteredBy"] == "DataLocality"
            fleet.finish_all("needs-data")
        finally:
            fleet.set_members()

    def test_the_cheaper_member_wins(self, fleet: Fleet) -> None:
        price = [{"resource": "cpu", "price": "3"}]
        fleet.set_members(a={"cost": price}, b={"cost": [{"resource": "cpu", "price": "1"}]})
        try:
            h.settle(0.5)  # let the prices reach the dispatcher
            fleet.submit(h.job("thrifty", cpu="2"))
            assert fleet.placed("thrifty") == "b"
            wl = h.wait(fleet.manager, lambda: (w := fleet.workload("thrifty"))
                        .get("status", {}).get("dispatch") and w, "the decision in status")
            cost = {name: next(s for s in c["scores"] if s["plugin"] == "Cost")
                    for name, c in scores(wl).items()}
            assert cost["b"]["score"] > cost["a"]["score"]
            fleet.finish_all("thrifty")
        finally:
            fleet.set_members()

    def test_load_is_spread_over_equal_members(self, fleet: Fleet) -> None:
        names = [f"spread-{i}" for i in range(4)]
        placed = []
        for name in names:
            fleet.submit(h.job(name, cpu="4"))
            placed.append(fleet.placed(name))
        assert sorted(placed) == ["a", "a", "b", "b"], placed
        def free_cpu() -> str | None:
            free = {c["name"]: c["resources"] for c in fleet.member_status("a")["freeCapacity"]}
            return free["cpu"]["cpu"] if free["cpu"]["cpu"] == "8" else None

        h.wait(fleet.manager, free_cpu, "a's free capacity to count the two copies")
        fleet.finish_all(*names)

    def test_a_gang_that_fits_in_sum_but_not_node_by_node_is_not_sent_there(
            self, fleet: Fleet) -> None:
        # Three 5-cpu pods: a has 16 cpu in all, but each 8-cpu node takes one pod.
        fleet.submit(h.job("gang", cpu="5", parallelism=3))
        assert fleet.placed("gang") == "b"
        wl = h.wait(fleet.manager, lambda: (w := fleet.workload("gang"))
                    .get("status", {}).get("dispatch") and w, "the decision in status")
        assert scores(wl)["a"]["filteredBy"] == "CapacityEstimate"
        fleet.finish_all("gang")


class TestFollow:
    def test_success_is_copied_home_and_the_copy_removed(self, fleet: Fleet) -> None:
        fleet.submit(h.job("ok"))
        where = fleet.placed("ok")
        fleet.finish(where, "ok")
        h.wait(fleet.manager, lambda: h.is_true(h.get_job(fleet.manager, "ok"), "Complete"),
               "the local Job Complete")
        wl = h.wait(fleet.manager, lambda: (w := fleet.workload("ok")) and
                    h.is_true(w, "Finished") and w, "the Workload finished")
        assert h.condition(wl, "Finished")["reason"] == "Succeeded"
        assert h.get_job(fleet.manager, "ok")["status"]["succeeded"] == 1
        h.wait(fleet.manager, lambda: not fleet.copies("ok"), "the copy deleted")

    def test_failure_is_copied_home(self, fleet: Fleet) -> None:
        fleet.submit(h.job("broken"))
        where = fleet.placed("broken")
        fleet.finish(where, "broken", failed=True)
        wl = h.wait(fleet.manager, lambda: (w := fleet.workload("broken")) and
                    h.is_true(w, "Finished") and w, "the Workload finished")
        assert h.condition(wl, "Finished")["reason"] == "Failed"
        assert h.is_true(h.get_job(fleet.manager, "broken"), "Failed")
        h.wait(fleet.manager, lambda: not fleet.copies("broken"), "the copy deleted")

    def test_member_status_shows_health_and_capacity(self, fleet: Fleet) -> None:
        found = fleet.member_status("b")
        assert h.is_true({"status": found}, "Active")
        assert found["nodeCount"] == 3
        assert found["lastSeenTime"]
        capacity = {c["name"]: c["resources"] for c in found["capacity"]}
        assert capacity["a100"]["nvidia.com/gpu"] == "4"
        assert capacity["cpu"]["cpu"] == "24"
        assert "a100" not in {c["name"] for c in fleet.member_status("a")["capacity"]}


class TestManagedBy:
    """The local Job is kuota's alone (spec.managedBy), the copy is the member's."""

    def test_progress_goes_home_to_a_job_only_kuota_manages(self, fleet: Fleet) -> None:
        fleet.submit(h.job("owned"))
        where = fleet.placed("owned")
        assert h.get_job(fleet.manager, "owned")["spec"]["managedBy"] == MANAGED_BY
        copy = fleet.copy(where, "owned")
        assert copy is not None and "managedBy" not in copy["spec"]
        # the member's Job controller runs the copy
        fleet.members[where].patch("batch/v1", "Job", "owned", {"status": {
            "startTime": "2025-01-01T00:00:00Z", "active": 1, "ready": 1}},
            namespace="default", subresource="status")
        h.wait(fleet.manager, lambda: (h.get_job(fleet.manager, "owned").get("status") or {})
               .get("ready") == 1, "the copy's progress copied home")
        fleet.finish_all("owned")
        local = h.get_job(fleet.manager, "owned")["status"]
        assert [c["type"] for c in local["conditions"]] == ["SuccessCriteriaMet", "Complete"]
        assert (local["active"], local["ready"], local["succeeded"]) == (0, 0, 1)
        assert local["completionTime"] and local["startTime"]

    def test_a_job_without_it_is_rejected_instead_of_dispatched(self, fleet: Fleet) -> None:
        # Straight into the store: no webhook ran, as for a Job created before its queue
        # dispatched to members.
        fleet.manager.create(h.job("unowned"))
        try:
            wl = h.wait(fleet.manager, lambda: (w := h.workload_of(fleet.manager, "unowned"))
                        and w["spec"].get("active") is False and w, "the Workload deactivated")
            assert "cannot be dispatched: its spec.managedBy is not kuota.dev/multicluster" \
                in h.condition(wl, "Evicted")["message"]
            h.settle(0.5)
            assert not fleet.copies("unowned")
            assert h.get_job(fleet.manager, "unowned")["spec"]["suspend"] is True
        finally:
            fleet.manager.delete("batch/v1", "Job", "unowned", "default")
