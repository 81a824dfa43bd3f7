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
        other_gates: tuple[str, ...] = ()) -> dict[str, Any]:
    """A pod: gated unless ``on`` names the (rack, host) it was pinned to."""
    annotations = {} if index is None else {names.COMPLETION_INDEX: str(index)}
    spec: dict[str, Any] = {"schedulingGates": [{"name": g} for g in other_gates]}
    if on is None:
        spec["schedulingGates"].append(GATE)
    else:
        spec["nodeSelector"] = {"pool": "tas", RACK: on[0], HOST: on[1]}
    return {"metadata": {"name": name, "creationTimestamp": at, "annotations": annotations},
            "spec": spec, "status": {"phase": phase}}


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
