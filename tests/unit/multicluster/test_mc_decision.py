"""select(): candidates, filtering, weighted scores, tie-breaks, and the explanation it returns."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from multicluster_builders import (
    FLAVORS,
    GPU,
    NOW,
    admit,
    config,
    decide,
    gpu_member,
    pod_set,
    prices,
    workload,
)

from multicluster.decision import EXCLUDED, NOT_FOUND, ClusterResult, Decision, select
from multicluster.explain import render, summary
from multicluster.hints import NO_HINTS, Hints, parse_selector
from multicluster.request import RequestError
from quota.workload import Admission, PodSetAdmission

GANG = workload(pod_set(count=2, requests=f"{GPU}=4"))


def fleet() -> list[Any]:
    """Four members: two feasible with different prices and loads, two refused."""
    return [
        gpu_member("eu-a100", (8, 8), cost=prices(nvidia_com_gpu=2.0), datasets=("imagenet",),
                   labels={"topology.kubernetes.io/region": "eu"}),
        gpu_member("us-a100", (8, 8, 8, 8), cost=prices(nvidia_com_gpu=4.0),
                   labels={"topology.kubernetes.io/region": "us"}),
        gpu_member("us-t4", (8, 8), model="t4"),
        gpu_member("ap-a100", (8, 8), last_seen=NOW - 600),
    ]


# --- choosing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    weights: dict[str, int] | None
    want_cluster: str | None
    want_totals: dict[str, int]
    hints: Hints = NO_HINTS


CASES = [
    # Cost: eu 100 (8/h), us 50 (16/h). LoadBalance: eu (16-8)/16 = 50, us (32-8)/32 = 75.
    Case("default weights", None, "eu-a100", {"eu-a100": 150, "us-a100": 125}),
    Case("load balance weighs more", {"LoadBalance": 3}, "us-a100",
         {"eu-a100": 250, "us-a100": 275}),
    Case("cost only", {"LoadBalance": 0}, "eu-a100", {"eu-a100": 100, "us-a100": 50}),
    Case("binpack instead of spreading", {"LoadBalance": 0, "Cost": 0, "Binpack": 1}, "eu-a100",
         {"eu-a100": 50, "us-a100": 25}),
    Case("preferred data", {"Cost": 0, "DataLocality": 2}, "eu-a100",
         {"eu-a100": 250, "us-a100": 75}, Hints(preferred_datasets=("imagenet",))),
    Case("selector leaves one", None, "us-a100", {"us-a100": 175},
         Hints(parse_selector("topology.kubernetes.io/region=us"))),
    Case("required data nobody holds", None, None, {},
         Hints(required_datasets=("laion",))),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_choice_and_totals(case: Case) -> None:
    decision = decide(GANG, fleet(), hints=case.hints, cfg=config(weights=case.weights))
    assert decision.cluster == case.want_cluster
    assert {r.cluster: r.total for r in decision.feasible} == case.want_totals
    totals = [r.total for r in decision.feasible]
    assert totals == sorted(totals, reverse=True)


def test_every_candidate_is_explained() -> None:
    decision = decide(GANG, fleet())
    assert [r.cluster for r in decision.results] == ["eu-a100", "us-a100", "ap-a100", "us-t4"]
    eu = decision.result("eu-a100")
    assert [(s.plugin, s.raw, s.score, s.weight) for s in eu.scores] == [
        ("Cost", pytest.approx(16.0), 100, 1), ("LoadBalance", 50.0, 50, 1),
        ("DataLocality", 0.0, 0, 1)]
    assert decision.result("us-t4").filtered_by == "Hardware"
    assert "flavor a100" in decision.result("us-t4").reason
    assert decision.result("ap-a100").filtered_by == "Health"
    assert "last seen 600s ago" in decision.result("ap-a100").reason
    assert decision.max_total == 300
    assert decision.config == "fleet"


def test_gang_that_fits_in_sum_but_not_node_by_node_is_not_sent_there() -> None:
    roomy_in_sum = gpu_member("roomy", (5, 5, 5, 5))  # 20 free, no node with 6
    tight = gpu_member("tight", (6, 6))  # 12 free, two nodes with 6
    decision = decide(workload(pod_set(count=2, requests=f"{GPU}=6")), [roomy_in_sum, tight])
    assert decision.cluster == "tight"
    refused = decision.result("roomy")
    assert refused.filtered_by == "CapacityEstimate"
    assert "the free nodes take 0" in refused.reason


def test_ties_go_to_the_first_name_whatever_the_input_order() -> None:
    twins = [gpu_member(name, (8, 8)) for name in ("m-c", "m-a", "m-b")]
    answers = set()
    for seed in range(5):
        random.Random(seed).shuffle(twins)
        decision = decide(GANG, twins)
        answers.add((decision.cluster, tuple(r.cluster for r in decision.results)))
    assert answers == {("m-a", ("m-a", "m-b", "m-c"))}


# --- candidates ---------------------------------------------------------------------------------


def test_config_lists_candidates_and_missing_ones_are_reported() -> None:
    decision = decide(GANG, fleet(), cfg=config(clusters=("us-a100", "gone")))
    assert [(r.cluster, r.filtered_by) for r in decision.results] == [
        ("us-a100", None), ("gone", NOT_FOUND)]


def test_excluded_members_carry_the_callers_reason() -> None:
    decision = decide(GANG, fleet(), exclude={"eu-a100": "creating the Job failed 5 times"})
    assert decision.cluster == "us-a100"
    assert decision.result("eu-a100") == ClusterResult(
        "eu-a100", EXCLUDED, "creating the Job failed 5 times")


def test_no_filters_enabled_still_scores_everything() -> None:
    every = ("Health", "ClusterAffinity", "TaintToleration", "DataLocality", "Hardware",
             "CapacityEstimate")
    decision = decide(GANG, fleet(), cfg=config(disabled=every))
    assert len(decision.feasible) == 4


@pytest.mark.parametrize(("admission", "want_error"), [
    (Admission("cq", (PodSetAdmission("other", 1, {GPU: "a100"}, {}),)),
     "workload ml/train: podSet other: admitted but not in the workload"),
    (Admission("cq", (PodSetAdmission("main", 1, {GPU: "h100"}, {}),)),
     "workload ml/train: podSet main: flavor h100 is not known"),
])
def test_inconsistent_inputs_are_errors(admission: Admission, want_error: str) -> None:
    with pytest.raises(RequestError, match=want_error):
        select(GANG, admission, fleet(), config(), now=NOW, flavors=FLAVORS)


def test_a_member_given_twice_is_an_error() -> None:
    with pytest.raises(ValueError, match="member cluster eu-a100 is given twice"):
        select(GANG, admit(GANG), [*fleet(), gpu_member("eu-a100")], config(), now=NOW,
               flavors=FLAVORS)


# --- explanation ------------------------------------------------------------------------------


def test_decision_survives_a_round_trip_through_plain_values() -> None:
    decision = decide(GANG, fleet())
    data = decision.to_dict()
    assert data["cluster"] == "eu-a100"
    assert data["clusters"][0] == {"name": "eu-a100", "total": 150, "scores": [
        {"plugin": "Cost", "raw": pytest.approx(16.0), "score": 100, "weight": 1},
        {"plugin": "LoadBalance", "raw": 50.0, "score": 50, "weight": 1},
        {"plugin": "DataLocality", "raw": 0.0, "score": 0, "weight": 1}]}
    assert data["clusters"][3] == {"name": "us-t4", "filteredBy": "Hardware",
                                   "reason": decision.result("us-t4").reason}
    assert Decision.from_dict(data) == decision


def test_malformed_stored_decision_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="stored dispatch decision is malformed"):
        Decision.from_dict({"workload": "ml/x", "clusters": [{"total": 3}]})


def test_render_shows_scores_weights_and_reasons() -> None:
    text = render(decide(GANG, fleet()))
    lines = text.splitlines()
    assert lines[0] == "Workload ml/train: dispatched to eu-a100 (config fleet)"
    assert lines[1].split() == ["Member", "Total", "Cost", "LoadBalance", "DataLocality"]
    assert lines[2].split() == ["eu-a100", "150/300", "100×1", "(16)", "50×1", "(50)", "0×1",
                                "(0)"]
    assert lines[3].split()[:2] == ["us-a100", "125/300"]
    assert lines[4] == "Filtered out:"
    assert lines[5].startswith("  ap-a100  Health: member last seen 600s ago")
    assert lines[6].startswith("  us-t4    Hardware: no node has the labels of flavor a100")


def test_render_when_nothing_fits() -> None:
    text = render(decide(GANG, fleet(), hints=Hints(required_datasets=("laion",))))
    assert text.splitlines()[0] == "Workload ml/train: no member cluster can run it (config fleet)"
    assert "Member" not in text


@pytest.mark.parametrize(("hints", "want"), [
    (Hints(), "dispatched to eu-a100 (score 150/300; next us-a100 125); filtered out "
              "1 by Hardware, 1 by Health"),
    (Hints(required_datasets=("laion",)),
     "no member cluster can run it (3 by DataLocality, 1 by Health); e.g. ap-a100: Health: "
     "member last seen 600s ago (staleAfter is 60s)"),
])
def test_summary_line(hints: Hints, want: str) -> None:
    assert summary(decide(GANG, fleet(), hints=hints)) == want


def test_summary_without_members() -> None:
    assert summary(decide(GANG, [])) == "no member cluster is configured"
