"""kubectl kuota: the tables it prints and the patches it sends (pure parts)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kuota.kubectl import build_parser, main, patch_for, pending_rows, rows


def workload(name: str, queue: str, *, cq: str = "", admitted: bool = False,
             finished: bool = False, active: bool | None = None) -> dict[str, Any]:
    conditions = [{"type": t, "status": "True"}
                  for t, on in (("Admitted", admitted), ("Finished", finished)) if on]
    spec: dict[str, Any] = {"queueName": queue}
    if active is not None:
        spec["active"] = active
    return {"metadata": {"name": name, "namespace": "team"}, "spec": spec,
            "status": {"admission": {"clusterQueue": cq} if cq else None,
                       "conditions": conditions}}


WORKLOADS = [workload("a", "lq1"), workload("b", "lq1", cq="cq", admitted=True),
             workload("c", "lq2", cq="cq", admitted=True, finished=True, active=False)]


@pytest.mark.parametrize(("filters", "want_names"), [
    ({}, ["a", "b", "c"]),
    ({"status": "pending"}, ["a"]),
    ({"status": "admitted"}, ["b"]),
    ({"status": "finished"}, ["c"]),
    ({"localqueue": "lq1"}, ["a", "b"]),
    ({"clusterqueue": "cq"}, ["b", "c"]),
])
def test_workload_filters(filters: dict[str, str], want_names: list[str]) -> None:
    table = rows("workloads", WORKLOADS, **filters)
    assert table[0][:2] == ["NAMESPACE", "NAME"]
    assert [r[1] for r in table[1:]] == want_names


def test_workload_rows_show_queue_state_and_activity() -> None:
    assert rows("workloads", WORKLOADS)[3] == ["team", "c", "lq2", "cq", "Finished", "false"]


def test_cluster_queue_rows_read_status_counts() -> None:
    cq = {"metadata": {"name": "cq"}, "spec": {"cohortName": "co", "stopPolicy": "Hold"},
          "status": {"pendingWorkloads": 3, "admittedWorkloads": 2}}
    assert rows("clusterqueues", [cq]) == [["NAME", "COHORT", "PENDING", "ADMITTED", "STOP"],
                                          ["cq", "co", "3", "2", "Hold"]]


@pytest.mark.parametrize(("plural", "verb", "keep", "want"), [
    ("clusterqueues", "stop", False, {"spec": {"stopPolicy": "HoldAndDrain"}}),
    ("clusterqueues", "stop", True, {"spec": {"stopPolicy": "Hold"}}),
    ("localqueues", "resume", False, {"spec": {"stopPolicy": "None"}}),
    ("workloads", "stop", False, {"spec": {"active": False}}),
    ("workloads", "resume", False, {"spec": {"active": True}}),
])
def test_stop_and_resume_patches(plural: str, verb: str, keep: bool,
                                 want: dict[str, Any]) -> None:
    assert patch_for(plural, verb, keep) == want


def test_kind_aliases_parse() -> None:
    args = build_parser().parse_args(["list", "cq"])
    assert (args.verb, args.kind) == ("list", "cq")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["list", "jobs"])


SUMMARY = {"kind": "PendingWorkloadsSummary", "items": [
    {"metadata": {"name": "w1", "namespace": "team"}, "priority": 5, "localQueueName": "lq",
     "positionInClusterQueue": 3, "positionInLocalQueue": 0, "reason": "Pending"},
    {"metadata": {"name": "huge", "namespace": "team"}, "priority": 9, "localQueueName": "lq",
     "positionInClusterQueue": 4, "positionInLocalQueue": 1, "reason": "ExceedsMaxQuota",
     "inadmissible": True},
]}


@pytest.mark.parametrize(("local", "want_positions"), [(False, ("3", "4")), (True, ("0", "1"))])
def test_pending_rows_show_the_queues_own_position_and_who_blocks_no_one(
        local: bool, want_positions: tuple[str, str]) -> None:
    assert pending_rows(SUMMARY, local=local) == [
        ["POSITION", "NAMESPACE", "NAME", "LOCALQUEUE", "PRIORITY", "STATE", "REASON"],
        [want_positions[0], "team", "w1", "lq", "5", "Active", "Pending"],
        [want_positions[1], "team", "huge", "lq", "9", "Inadmissible (blocks no one)",
         "ExceedsMaxQuota"]]


@pytest.mark.parametrize(("flags", "want_spec", "want_error"), [
    pytest.param(["--nominal-quota", "on:cpu=8,memory=32Gi;spot:memory=1Gi,cpu=2",
                  "--borrowing-limit", "on:cpu=4", "--lending-limit", "spot:memory=1Gi",
                  "--cohort", "org"],
                 {"cohortName": "org", "namespaceSelector": {}, "resourceGroups": [
                     {"coveredResources": ["cpu", "memory"], "flavors": [
                         {"name": "on", "resources": [
                             {"name": "cpu", "nominalQuota": "8", "borrowingLimit": "4"},
                             {"name": "memory", "nominalQuota": "32Gi"}]},
                         {"name": "spot", "resources": [
                             {"name": "cpu", "nominalQuota": "2"},
                             {"name": "memory", "nominalQuota": "1Gi", "lendingLimit": "1Gi"}]},
                     ]}]},
                 None, id="flavors with the same resources share a group"),
    pytest.param(["--nominal-quota", "on:cpu=8;gpu:nvidia.com/gpu=4",
                  "--namespace-selector", "team=a", "--queuing-strategy", "StrictFIFO",
                  "--reclaim-within-cohort", "Any"],
                 {"namespaceSelector": {"matchLabels": {"team": "a"}},
                  "queueingStrategy": "StrictFIFO", "preemption": {"reclaimWithinCohort": "Any"},
                  "resourceGroups": [
                      {"coveredResources": ["cpu"], "flavors": [
                          {"name": "on", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]},
                      {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                          {"name": "gpu", "resources": [
                              {"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]}]},
                 None, id="different resources: separate groups; policies"),
    pytest.param(["--nominal-quota", "on:cpu=8,memory=1Gi;spot:cpu=2"], None,
                 "--nominal-quota: flavors on and spot share cpu but not the rest",
                 id="overlapping groups"),
    pytest.param(["--nominal-quota", "on:cpu"], None,
                 "--nominal-quota: on: 'cpu': expected RESOURCE=QUANTITY", id="no quantity"),
    pytest.param(["--nominal-quota", "on:cpu=lots"], None,
                 "nominalQuota: 'lots' is not a quantity", id="the model names the field"),
    pytest.param(["--nominal-quota", "on:cpu=1", "--borrowing-limit", "on:memory=1"], None,
                 "--borrowing-limit: on/memory has no --nominal-quota", id="limit without quota"),
])
def test_create_clusterqueue(flags: list[str], want_spec: dict[str, Any] | None,
                             want_error: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["create", "clusterqueue", "team-a", "--dry-run", *flags])
    out, err = capsys.readouterr()
    if want_error is not None:
        assert code == 2 and want_error in err
        return
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert doc["kind"] == "ClusterQueue" and doc["metadata"] == {"name": "team-a"}
    assert doc["spec"] == want_spec


@pytest.mark.parametrize(("flags", "want_error"), [
    (["-c", "research"], None),
    ([], "localqueue: --clusterqueue is required"),
    (["-c", "Not_A_Name"], "spec.clusterQueue: 'Not_A_Name' is not a DNS-1123 subdomain"),
])
def test_create_localqueue(flags: list[str], want_error: str | None,
                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["create", "localqueue", "main", "-n", "team-a", "--dry-run", *flags])
    out, err = capsys.readouterr()
    if want_error is not None:
        assert code == 2 and want_error in err
        return
    assert yaml.safe_load(out) == {
        "apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
        "metadata": {"name": "main", "namespace": "team-a"},
        "spec": {"clusterQueue": "research"}}


class TestPendingWhereTheVisibilityApiIsMissing:
    """``kubectl kuota pending`` says why positions are unavailable instead of a bare
    ``404 Not Found``: the API not installed (discovery does not know the group), or
    installed with nobody answering (503); a queue the API does not know stays a 404."""

    @staticmethod
    def answers(monkeypatch: pytest.MonkeyPatch, *, discovery: int, pending: int) -> None:
        from kubernetes.client import ApiException

        import kuota.kubectl as plugin

        def get_raw(api_client: Any, path: str, query: Any = None) -> Any:
            status = discovery if path == plugin.VISIBILITY else pending
            if status != 200:
                raise ApiException(status=status, reason={404: "Not Found",
                                                          503: "Service Unavailable"}[status])
            return {"items": []}

        monkeypatch.setattr(plugin, "_get_raw", get_raw)

    @staticmethod
    def pending() -> int:
        import argparse

        import kuota.kubectl as plugin

        args = argparse.Namespace(offset=0, limit=10)
        return plugin._pending(None, "clusterqueues", "research", "default", args)

    @pytest.mark.parametrize(("answer", "want"), [
        (404, ["the API visibility.kuota.dev/v1beta2 is not installed", "visibility.enabled=true"]),
        (503, ["is installed but its server did not answer (503", "--visibility-listen"]),
    ], ids=["not-installed", "not-answering"])
    def test_why_positions_are_unavailable(self, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str], answer: int,
                                           want: list[str]) -> None:
        self.answers(monkeypatch, discovery=answer, pending=answer)
        status, err = self.pending(), capsys.readouterr().err
        assert status == 1
        assert all(text in err for text in want), err
        assert "Not Found" not in err

    def test_an_unknown_queue_is_still_a_404(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kubernetes.client import ApiException

        self.answers(monkeypatch, discovery=200, pending=404)
        with pytest.raises(ApiException) as raised:
            self.pending()
        assert raised.value.status == 404
