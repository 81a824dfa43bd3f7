"""Records: the admission's JSON form, and hashes read back whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from queueing.store.records import admission_from_json, admission_to_json
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
