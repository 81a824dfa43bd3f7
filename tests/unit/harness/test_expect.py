"""The scenario checker (kuota/expect.py): what a partial ``expect`` block matches, and
which path each mismatch names — a checker that passed everything would let every
scenario test pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kuota import expect

Body = dict[str, Any]


def outcome(*, admitted: list[float], evicted: tuple[float, ...] = (),
            finished: float | None = None) -> Body:
    return {"admissions": [{"at": t} for t in admitted],
            "evictions": [{"at": t} for t in evicted], "finishedAt": finished}


RESULT: Body = {
    "workloads": {
        "a/w1": {**outcome(admitted=[0.0], finished=10.0), "state": "Finished",
                 "tags": ["x", "y"], "cpu": 2.0},
        "a/w2": outcome(admitted=[0.0, 6.0], evicted=(5.0,), finished=12.0),
        "b/w3": outcome(admitted=[5.0]),
    },
    "summary": {"admitted": 3, "ratio": 0.5},
}


@dataclass(frozen=True)
class Case:
    name: str
    expect: Body
    want_problems: list[str]


CASES = [
    Case("a partial mapping matches", {"workloads": {"a/w1": {"state": "Finished"}}}, []),
    Case("numbers within 1e-6", {"summary": {"ratio": 0.5000004, "admitted": 3}}, []),
    Case("a number off", {"summary": {"ratio": 0.6}},
         ["summary.ratio: expected 0.6, got 0.5"]),
    Case("a string off", {"workloads": {"a/w1": {"state": "Admitted"}}},
         ["workloads.a/w1.state: expected 'Admitted', got 'Finished'"]),
    Case("a missing key", {"workloads": {"c/w9": {"state": "Pending"}}},
         ["workloads.c/w9: missing (expected {'state': 'Pending'})"]),
    Case("lists match element by element", {"workloads": {"a/w1": {"tags": ["x", "z"]}}},
         ["workloads.a/w1.tags[1]: expected 'z', got 'y'"]),
    Case("lists of another length", {"workloads": {"a/w1": {"tags": ["x"]}}},
         ["workloads.a/w1.tags: expected 1 items, got 2: ['x', 'y']"]),
    Case("a bool is not a number", {"summary": {"admitted": True}},
         ["summary.admitted: expected True, got 3"]),
    Case("a mapping expected", {"summary": {"ratio": {"x": 1}}},
         ["summary.ratio: expected a mapping, got 0.5"]),
    Case("running at an instant, per namespace",
         {"runningAt": [{"at": 5.5, "namespaces": {"a": 1, "b": 1}},
                        {"at": 7, "namespaces": {"a": 2}}]}, []),
    Case("running at an instant, off",
         {"runningAt": [{"at": 5.5, "namespaces": {"a": 2}}]},
         ["runningAt[0] (t=5.5): expected {'a': 2}, got {'a': 1}"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check(case: Case) -> None:
    assert expect.check(case.expect, RESULT) == case.want_problems


@pytest.mark.parametrize(("at", "want"), [
    (0.0, {"a": 2}),            # both admitted at 0
    (5.0, {"a": 1, "b": 1}),    # w2 evicted at 5 (ends at 5), w3 admitted at 5
    (6.0, {"a": 2, "b": 1}),    # w2 admitted again
    (10.0, {"a": 1, "b": 1}),   # w1 finished at 10
    (12.5, {"b": 1}),
])
def test_running_at(at: float, want: dict[str, int]) -> None:
    assert expect.running_at(RESULT, at) == want
