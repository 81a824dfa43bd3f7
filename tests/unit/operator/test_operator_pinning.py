"""Which gated pod goes to which topology domain (the pure part of the ungater)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kuota.operator import names, pinning

RACK, HOST = "rack", "kubernetes.io/hostname"
LEVELS = (RACK, HOST)
GATE = {"name": names.TOPOLOGY_GATE}


def pod(name: str, *, index: int | None = None, at: str = "2026-01-01T00:00:00Z",
        on: tuple[str, str] | None = None, phase: str = "Pending",
        other_gates: tuple[str, ...] = (), terminating: bool = False,
        selector: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod: gated unless ``on`` names the (rack, host) it was pinned to; ``selector``:
    nodeSelector keys it has from its template (or an admission plugin)."""
    annotations = {} if index is None else {names.COMPLETION_INDEX: str(index)}
    spec: dict[str, Any] = {"schedulingGates": [{"name": g} for g in other_gates]}
    if on is None:
        spec["schedulingGates"].append(GATE)
    else:
        spec["nodeSelector"] = {"pool": "tas", RACK: on[0], HOST: on[1]}
    if selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **selector}
    meta: dict[str, Any] = {"name": name, "creationTimestamp": at, "annotations": annotations}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


@dataclass
class Case:
    name: str
    pods: list[dict[str, Any]]
    domains: list[tuple[tuple[str, ...], int]] | None
    #: pod name -> host it is pinned to ("" = ungated with no selector).
    want_pinned: dict[str, str] = field(default_factory=dict)


CASES = [
    Case("greedy fills domains in order, oldest pods first",
         [pod("b", at="2026-01-01T00:00:02Z"), pod("a", at="2026-01-01T00:00:01Z"),
          pod("c", at="2026-01-01T00:00:03Z")],
         [(("r1", "n1"), 2), (("r1", "n2"), 1)],
         {"a": "n1", "b": "n1", "c": "n2"}),
    Case("same creation time: by name",
         [pod("y"), pod("x")], [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"x": "n1", "y": "n2"}),
    Case("pods already ungated take their domain's room",
         [pod("old", on=("r1", "n1")), pod("new")],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"new": "n2"}),
    Case("more gated pods than room: the rest stay gated",
         [pod("a"), pod("b"), pod("c", at="2026-01-01T00:00:09Z")],
         [(("r1", "n1"), 2)],
         {"a": "n1", "b": "n1"}),
    Case("a pod that ended frees its place for its replacement",
         [pod("gone", on=("r1", "n1"), phase="Failed"), pod("kept", on=("r1", "n2")),
          pod("replacement")],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"replacement": "n1"}),
    Case("indexed pods go by rank: index i to the i-th slot",
         [pod("p2", index=2), pod("p0", index=0), pod("p1", index=1)],
         [(("r1", "n1"), 1), (("r1", "n2"), 2)],
         {"p0": "n1", "p1": "n2", "p2": "n2"}),
    Case("by rank, a replacement goes where its index was",
         [pod("p0", index=0, on=("r1", "n1")), pod("p1", index=1, on=("r1", "n2")),
          pod("p1-again", index=1, phase="Failed", on=("r1", "n2")),
          pod("p2", index=2)],
         [(("r1", "n1"), 1), (("r1", "n2"), 1), (("r2", "n3"), 1)],
         {"p2": "n3"}),
    Case("index 0 ungated elsewhere than its rank: greedy by index instead",
         [pod("p0", index=0, on=("r1", "n2")), pod("p1", index=1), pod("p2", index=2)],
         [(("r1", "n1"), 2), (("r1", "n2"), 1)],
         {"p1": "n1", "p2": "n1"}),
    Case("indices beyond the assignment (completions > parallelism): greedy by index",
         [pod("p7", index=7), pod("p3", index=3)],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"p3": "n1", "p7": "n2"}),
    Case("a terminating pod takes no room: its replacement goes there at once",
         [pod("dying", on=("r1", "n1"), terminating=True), pod("kept", on=("r1", "n2")),
          pod("replacement")],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"replacement": "n1"}),
    Case("by rank, a terminating pod leaves its index to its replacement",
         [pod("p0", index=0, on=("r1", "n1")), pod("p1", index=1, on=("r1", "n2"),
                                                   terminating=True),
          pod("p1-again", index=1)],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"p1-again": "n2"}),
    Case("a gated terminating pod is not pinned",
         [pod("dying", terminating=True), pod("b")], [(("r1", "n1"), 2)],
         {"b": "n1"}),
    Case("greedy skips domains a pod's nodeSelector contradicts",
         [pod("a", selector={RACK: "r2"}), pod("b")],
         [(("r1", "n1"), 1), (("r2", "n3"), 1)],
         {"a": "n3", "b": "n1"}),
    Case("by rank, a slot the pod contradicts: greedy instead",
         [pod("p0", index=0, selector={HOST: "n2"}), pod("p1", index=1)],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"p0": "n2", "p1": "n1"}),
    Case("a pod agreeing with no domain stays gated",
         [pod("a", selector={RACK: "r9"})], [(("r1", "n1"), 1)], {}),
    Case("no assignment: every gated pod is ungated without a selector",
         [pod("a"), pod("b", on=("r1", "n1"))], None,
         {"a": ""}),
    Case("nothing gated: nothing to do",
         [pod("a", on=("r1", "n1"))], [(("r1", "n1"), 1)], {}),
    Case("another gate does not count as ours",
         [pod("mine"), pod("theirs", on=("r1", "n1"), other_gates=("example.com/x",))],
         [(("r1", "n1"), 1), (("r1", "n2"), 1)],
         {"mine": "n2"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plan(case: Case) -> None:
    levels = LEVELS if case.domains is not None else None
    got = pinning.plan(case.pods, levels, case.domains)
    pinned = {p["metadata"]["name"]: chosen.get(HOST, "") for p, chosen in got}
    assert pinned == case.want_pinned
    for _, chosen in got:
        if chosen:  # every level of the domain is named, and it is one of the domains
            assert set(chosen) == set(LEVELS)
            assert case.domains is not None
            assert (chosen[RACK], chosen[HOST]) in [values for values, _ in case.domains]


def test_a_malformed_index_is_no_index() -> None:
    bad = pod("p", index=0)
    bad["metadata"]["annotations"][names.COMPLETION_INDEX] = "-1"
    assert pinning.completion_index(bad) is None
    labelled = pod("q")
    labelled["metadata"]["labels"] = {names.COMPLETION_INDEX: "4"}
    assert pinning.completion_index(labelled) == 4


@pytest.mark.parametrize(("selector", "domains", "want_problem"), [
    ({}, [(("r1", "n1"), 1)], None),
    ({RACK: "r1"}, [(("r1", "n1"), 1)], None),  # agrees: only a key it already has
    ({RACK: "r2"}, [(("r1", "n1"), 1), (("r2", "n3"), 1)], None),  # one domain would do
    ({RACK: "r9"}, [(("r1", "n1"), 1), (("r2", "n3"), 1)], f"{RACK}=r9"),
    ({HOST: "n9"}, [(("r1", "n1"), 1)], f"{HOST}=n9"),
    ({RACK: "r9"}, None, None),  # no assignment: nothing is added to the pod
])
def test_unplaceable(selector: dict[str, str],
                     domains: list[tuple[tuple[str, ...], int]] | None,
                     want_problem: str | None) -> None:
    levels = LEVELS if domains is not None else None
    got = pinning.unplaceable(pod("p", selector=selector), levels, domains)
    if want_problem is None:
        assert got is None
    else:
        assert got is not None and want_problem in got and "may only gain keys" in got
