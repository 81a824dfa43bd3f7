"""The leader stores each admission as JSON; alike admissions (one queue, one flavor, one
shape) reuse one encoding. Reused or not, the text must be exactly what encoding that
admission gives."""

from __future__ import annotations

import pytest
from store_builders import new_store

from queueing.store import workloads as workloads_module
from queueing.store.records import admission_from_json, admission_to_json
from quota.workload import Admission, PodSetAdmission


def _ps(name: str = "main", count: int = 1, flavor: str = "default", cpu: int = 1000,
        **extra: object) -> PodSetAdmission:
    return PodSetAdmission(name, count, {"cpu": flavor}, {"cpu": cpu},
                           **extra)  # type: ignore[arg-type]


# The first, and others that differ from it in one thing each (an encoding reused for a
# key that missed that thing would give the first's text).
ADMISSIONS = [
    Admission("cq", (_ps(),)),
    Admission("cq", (_ps(count=2),)),
    Admission("cq", (_ps(cpu=2000),)),
    Admission("cq", (_ps(flavor="spot"),)),
    Admission("cq", (_ps("driver"),)),
    Admission("cq", (_ps(),), borrowing=True),
    Admission("cq", (_ps(),), cluster="member-a"),
    Admission("other", (_ps(),)),
    Admission("cq", (_ps(), _ps("workers"))),
    Admission("cq", (_ps(topology_levels=("host",)),)),
    Admission("cq", (_ps(topology_levels=("host",), topology=((("h1",), 1),)),)),
    Admission("cq", (_ps(nodes=(("h1", 1),)),)),
]


def test_every_admission_reads_back_as_itself_encoded_once_or_reused() -> None:
    store = new_store()
    for _ in range(2):  # encoded, then reused
        for admission in ADMISSIONS:
            text = store.workloads._admission_text(admission)
            assert text == admission_to_json(admission)
            assert admission_from_json(text) == admission


def test_the_encodings_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workloads_module, "ADMISSIONS_KEPT", 3)
    store = new_store()
    for admission in ADMISSIONS:
        assert store.workloads._admission_text(admission) == admission_to_json(admission)
        assert len(store.workloads._admission_json) <= 3
