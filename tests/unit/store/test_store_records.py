"""Records: the admission's JSON form, and hashes read back whole."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queueing.store.records import (
    Outcome,
    WorkloadRecord,
    _names,
    admission_from_json,
    admission_to_json,
)
from queueing.store.workloads import _RECORD_FIELDS, _named
from quota.lifecycle import State
from quota.workload import Admission, PodSetAdmission

names = st.text("abcdefgh-", min_size=1, max_size=8)


@st.composite
def pod_sets(draw: st.DrawFn) -> PodSetAdmission:
    flavors = draw(st.dictionaries(names, names, max_size=3))
    usage = {r: draw(st.integers(0, 10**15)) for r in flavors}
    topology = draw(st.lists(st.tuples(st.lists(names, max_size=3).map(tuple),
                                       st.integers(1, 9)), max_size=2).map(tuple))
    nodes = draw(st.lists(st.tuples(names, st.integers(1, 9)), max_size=2).map(tuple))
    levels = draw(st.lists(names, max_size=3).map(tuple))
    return PodSetAdmission(draw(names), draw(st.integers(0, 1000)), flavors, usage,
                           topology_levels=levels, topology=topology, nodes=nodes)


@given(st.builds(Admission, cluster_queue=names, pod_sets=st.lists(pod_sets(), max_size=3).map(
    tuple), borrowing=st.booleans(), cluster=st.none() | names))
def test_admission_round_trips(admission: Admission) -> None:
    back = admission_from_json(admission_to_json(admission))
    assert back == admission
    assert back.usage() == admission.usage()


# -- a workload hash read back --------------------------------------------------------

#: Every field a record reads, each with a value of its own: a field read into the wrong
#: attribute shows.
FULL_HASH = {
    "state": "Finished", "spec": '{"kind":"Workload"}', "queue": "ns/lq", "priority": "7",
    "created": "10.5", "queued_at": "11.25", "attempt": "3", "outcome": "Failed",
    "reason": "Failed", "message": "pod 0 exited 1", "cq": "cq-a",
    "admission": admission_to_json(Admission("cq-a", (PodSetAdmission("main", 2, {}, {}),))),
    "admitted_at": "12.0", "placement": '["n1","n2"]', "pods": "2", "pods_done": "1",
    "failures": "4", "backoff_limit": "5", "finished_at": "13.75", "submission": "sub-1",
    "dispatch": '{"cluster":"m1"}', "origin": "manager-1", "after": "finish",
    "shape": "shape-1", "spec_sum": "sum-1", "decision": "not a record field",
}


def test_every_field_is_read_into_its_attribute() -> None:
    assert WorkloadRecord.from_hash("ns/w", FULL_HASH) == WorkloadRecord(
        key="ns/w", state=State.FINISHED, spec_json='{"kind":"Workload"}', queue="ns/lq",
        priority=7, created=10.5, queued_at=11.25, attempt=3, outcome=Outcome.FAILED,
        reason="Failed", message="pod 0 exited 1", cluster_queue="cq-a",
        admission=Admission("cq-a", (PodSetAdmission("main", 2, {}, {}),)),
        admitted_at=12.0, placement=("n1", "n2"), pods=2, pods_done=1, failures=4,
        backoff_limit=5, finished_at=13.75, submission="sub-1",
        dispatch_json='{"cluster":"m1"}', origin="manager-1", after="finish",
        shape="shape-1", spec_sum="sum-1")
    assert WorkloadRecord.from_hash("ns/w", as_read(FULL_HASH)) == \
        WorkloadRecord.from_hash("ns/w", FULL_HASH)


@dataclass(frozen=True)
class HashCase:
    name: str
    hash: dict[str, str]
    #: The attributes expected (every other one keeps its default).
    want: dict[str, object]


HASH_CASES = [
    HashCase("only what every writer sets", {"state": "Pending", "attempt": "0"},
             {"state": State.PENDING}),
    HashCase("empty numbers read as their empty value",
             {"state": "Pending", "attempt": "0", "priority": "", "created": "",
              "queued_at": "", "admitted_at": "", "finished_at": "", "pods": ""},
             {"state": State.PENDING}),
    HashCase("times of zero", {"state": "Admitted", "attempt": "1", "created": "-0.0",
                                "admitted_at": "0"},
             {"state": State.ADMITTED, "attempt": 1, "admitted_at": 0.0}),
    HashCase("int() accepts what kuota never writes but reads",
             {"state": "Pending", "attempt": "0", "priority": " -3 "}, {"priority": -3}),
    HashCase("an empty outcome", {"state": "Finished", "attempt": "0", "outcome": ""},
             {"state": State.FINISHED, "outcome": Outcome.NONE}),
    HashCase("a placement as kuota writes it",
             {"state": "Admitted", "attempt": "1", "placement": '["n1","n-2","n.3"]'},
             {"state": State.ADMITTED, "attempt": 1, "placement": ("n1", "n-2", "n.3")}),
    HashCase("a placement written another way",
             {"state": "Admitted", "attempt": "1", "placement": '[ "n1" , "n\\"2" ]'},
             {"state": State.ADMITTED, "attempt": 1, "placement": ("n1", 'n"2')}),
]


def as_read(h: dict[str, str]) -> dict[str, str | None]:
    """The hash as the scheduler reads it: an ``HMGET`` of every record field (None where
    the hash has none), by field."""
    return _named(_RECORD_FIELDS, [h.get(f) for f in _RECORD_FIELDS])


@pytest.mark.parametrize("case", HASH_CASES, ids=[c.name for c in HASH_CASES])
def test_a_readable_hash(case: HashCase) -> None:
    record = WorkloadRecord.from_hash("ns/w", case.hash)
    assert record.corrupt == ""
    assert record == replace(WorkloadRecord("ns/w", State.PENDING), **case.want)
    assert WorkloadRecord.from_hash("ns/w", as_read(case.hash)) == record


@dataclass(frozen=True)
class CorruptCase:
    name: str
    hash: dict[str, str]
    want_state: State
    want_corrupt: str


_GOOD = {"state": "Admitted", "attempt": "1", "reason": "Admitted", "message": "m"}
CORRUPT_CASES = [
    CorruptCase("no state", {"attempt": "1", "reason": "r", "message": "m"}, State.PENDING,
                "KeyError: 'state'"),
    CorruptCase("an unknown state", {**_GOOD, "state": "Bogus"}, State.PENDING,
                "ValueError: 'Bogus' is not a valid State"),
    CorruptCase("an empty state", {**_GOOD, "state": ""}, State.PENDING,
                "ValueError: '' is not a valid State"),
    CorruptCase("no attempt", {"state": "Admitted", "reason": "r", "message": "m"},
                State.ADMITTED, "KeyError: 'attempt'"),
    CorruptCase("an attempt not written as kuota writes it", {**_GOOD, "attempt": "01"},
                State.ADMITTED, "ValueError: attempt '01' is not written as kuota writes it"),
    CorruptCase("an unknown outcome", {**_GOOD, "outcome": "Bogus"}, State.ADMITTED,
                "ValueError: 'Bogus' is not a valid Outcome"),
    CorruptCase("a priority not a number", {**_GOOD, "priority": "high"}, State.ADMITTED,
                "ValueError: invalid literal for int() with base 10: 'high'"),
    CorruptCase("a time not a number", {**_GOOD, "finished_at": "soon"}, State.ADMITTED,
                "ValueError: could not convert string to float: 'soon'"),
    CorruptCase("a placement cut short", {**_GOOD, "placement": '["n1"'}, State.ADMITTED,
                "JSONDecodeError: Expecting ',' delimiter: line 1 column 6 (char 5)"),
    CorruptCase("a placement with a control character", {**_GOOD, "placement": '["n\x01"]'},
                State.ADMITTED, "JSONDecodeError: Invalid control character at"),
    # Fields are read in the dataclass's order: the first bad one is named.
    CorruptCase("two bad fields", {**_GOOD, "pods": "x", "priority": "y"}, State.ADMITTED,
                "ValueError: invalid literal for int() with base 10: 'y'"),
]


@pytest.mark.parametrize("case", CORRUPT_CASES, ids=[c.name for c in CORRUPT_CASES])
def test_an_unreadable_hash_gives_a_corrupt_record(case: CorruptCase) -> None:
    record = WorkloadRecord.from_hash("ns/w", case.hash)
    assert record.corrupt.startswith(f"unreadable workload record: {case.want_corrupt}")
    assert record == WorkloadRecord("ns/w", case.want_state, reason=case.hash.get("reason", ""),
                                    message=case.hash.get("message", ""),
                                    corrupt=record.corrupt)
    assert WorkloadRecord.from_hash("ns/w", as_read(case.hash)) == record


#: Texts close to a JSON list of names: the fast split must agree with the parser on each.
_NEAR_JSON = st.text('[]",\\ au\x01\x7fé-', max_size=14)
_NAME_LISTS = st.lists(st.text(max_size=6), max_size=4)


@given(st.one_of(_NEAR_JSON,
                 _NAME_LISTS.map(lambda names: json.dumps(names, separators=(",", ":"))),
                 _NAME_LISTS.map(lambda names: json.dumps(names, ensure_ascii=False)),
                 st.lists(st.text("ab-", min_size=1, max_size=12), min_size=20, max_size=40)
                 .map(lambda names: json.dumps(names, separators=(",", ":")))))
def test_a_placement_reads_as_the_json_parser_reads_it(text: str) -> None:
    try:
        want: object = tuple(json.loads(text))
    except ValueError as exc:
        want = (type(exc), str(exc))
    try:
        got: object = _names(text)
    except ValueError as exc:
        got = (type(exc), str(exc))
    assert got == want
