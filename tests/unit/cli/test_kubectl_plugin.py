"""kubectl kuota: the tables it prints and the patches it sends (pure parts)."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.kubectl import build_parser, patch_for, rows


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
    assert rows("workloads", WORKLOADS)[3] == ["team", "c", "lq2", "cq", "finished", "false"]


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
