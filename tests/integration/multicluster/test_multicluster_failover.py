"""Failover: a member that stops answering loses its workloads to the other member, without
two running copies, and deletes its stale copy when it comes back."""

from __future__ import annotations

import time

from tests.integration.multicluster.fleet import Fleet
from tests.integration.operator import harness as h


def evicted_for_cluster_lost(fleet: Fleet, name: str) -> bool:
    """The operator announced the eviction (an Event on the Workload: ClusterLost)."""
    workload = fleet.workload(name)["metadata"]["name"]
    return any(e.get("reason") == "Evicted" and e["message"].startswith("ClusterLost")
               and e["involvedObject"]["name"] == workload
               for e in fleet.manager.list("v1", "Event", "default"))


class TestFailover:
    def test_a_lost_member_fails_over_and_cleans_up_when_back(self, own_fleet: Fleet) -> None:
        fleet = own_fleet
        fleet.set_members(b={"cost": [{"resource": "cpu", "price": "9"}]})  # a wins at first
        h.settle(0.5)
        fleet.submit(h.job("mobile", cpu="2"))
        assert fleet.placed("mobile") == "a"

        fleet.a.stop()
        h.wait(fleet.manager, lambda: not h.is_true({"status": fleet.member_status("a")},
                                                     "Active"), "a marked inactive")
        assert h.condition({"status": fleet.member_status("a")}, "Active")["reason"] == \
            "Unreachable"
        moved = h.wait(fleet.manager, lambda: fleet.copy("b", "mobile"), "a copy in b", 20)
        # The new copy started only after the workload was evicted from the lost member;
        # the old one sits on the unreachable member (fenced: nothing can reach it).
        assert evicted_for_cluster_lost(fleet, "mobile")
        assert moved["spec"]["suspend"] is False
        assert fleet.a.find("batch/v1", "Job", "mobile", "default") is not None
        wl = h.wait(fleet.manager, lambda: (w := fleet.workload("mobile")).get("status", {})
                    .get("clusterName") == "b" and w, "clusterName b")
        assert h.is_true(wl, "Admitted")

        fleet.a.start()
        h.wait(fleet.manager, lambda: fleet.a.find("batch/v1", "Job", "mobile", "default")
               is None, "the stale copy on a deleted")
        h.wait(fleet.manager, lambda: h.is_true({"status": fleet.member_status("a")},
                                                "Active"), "a Active again")
        assert fleet.copies("mobile").keys() == {"b"}
        fleet.finish("b", "mobile")
        h.wait(fleet.manager, lambda: h.is_true(fleet.workload("mobile"), "Finished"),
               "the moved Job to finish")

    def test_a_hanging_member_does_not_delay_the_others(self, own_fleet: Fleet) -> None:
        # Each member has its own task worker: while every call to a waits out its timeout
        # (10 s), b is still observed, and a Job goes to b and is followed home at once.
        fleet = own_fleet
        fleet.a.pause()
        try:
            h.settle(1.2)  # a is stale now (staleAfter 1s): the Health filter keeps it out
            started = time.monotonic()
            fleet.submit(h.job("around", cpu="2"))
            assert fleet.placed("around", timeout=8) == "b"
            fleet.finish("b", "around")
            h.wait(fleet.manager, lambda: h.is_true(fleet.workload("around"), "Finished"),
                   "the Job on b finished", 8)
            # Below a's read timeout (10 s): nothing waited for the hanging call. Loose
            # otherwise, so a loaded CI machine does not fail it.
            assert time.monotonic() - started < 9
            assert h.is_true({"status": fleet.member_status("b")}, "Active")
        finally:
            fleet.a.resume()
        h.wait(fleet.manager, lambda: h.is_true({"status": fleet.member_status("a")},
                                                "Active"), "a Active again", 15)

    def test_a_member_refusing_the_copy_is_given_up_on(self, own_fleet: Fleet) -> None:
        # a refuses every Job (as an admission webhook or a quota would): after five
        # failed creates, backing off between them, the workload is evicted and goes to b.
        fleet = own_fleet
        fleet.set_members(b={"cost": [{"resource": "cpu", "price": "9"}]})  # a wins at first
        h.settle(0.5)
        refusal = fleet.a.faults.fail(status=403, times=100, verbs={"create"}, plural="jobs",
                                      message="jobs are not allowed here (test policy)")
        fleet.submit(h.job("unwelcome", cpu="2"))
        assert fleet.placed("unwelcome", timeout=15) == "b"
        assert refusal.hits == 5
        workload = h.wait(fleet.manager, lambda: (w := fleet.workload("unwelcome"))
                          .get("status", {}).get("dispatch", {}).get("cluster") == "b" and w,
                          "the decision for b in status")
        name = workload["metadata"]["name"]
        events = h.wait(fleet.manager, lambda: [
            e for e in fleet.manager.list("v1", "Event", "default")
            if e["involvedObject"]["name"] == name and e.get("reason") == "Evicted"],
            "the eviction announced")
        assert len(events) == 1 and events[0]["message"].startswith("MemberRefused")
        assert "member cluster a failed to create the copy" in events[0]["message"]
        assert "jobs are not allowed here (test policy)" in events[0]["message"]
        excluded = {c["name"]: c for c in workload["status"]["dispatch"]["clusters"]}["a"]
        assert excluded["filteredBy"] == "Excluded"
        fleet.finish("b", "unwelcome")
        h.wait(fleet.manager, lambda: h.is_true(fleet.workload("unwelcome"), "Finished"),
               "the Job on b finished")
