"""A gang no node can ever hold does not hold quota forever (issue 12, scope 3).

Issue 12: a pod bigger than any node of its pool was admitted and held its quota for
good, and a 200-pod gang was admitted on a 4-CPU node. Now such a gang is taken out of
scheduling (Inactive, reason ``Inadmissible``) with a message naming the node shapes it
would need, and its quota goes to the others; a gang that only has to wait for busy
nodes, or for the first worker to register, still waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from store_builders import SteppedPool, node


@dataclass(frozen=True)
class Case:
    name: str
    #: Nodes registered before anything is submitted: name -> cpu.
    nodes: dict[str, int]
    #: (name, cpu per pod, pods), submitted in order. The ClusterQueue has cpu=4: "small"
    #: is admitted only if the gang before it gave its quota back.
    workloads: list[tuple[str, int, int]]
    want_states: dict[str, str]
    want_message: dict[str, list[str]] = field(default_factory=dict)


CASES = [
    Case("a pod bigger than every node", {"n1": 2}, [("big", 3, 1), ("small", 2, 1)],
         {"big": "Inactive", "small": "Admitted"},
         {"big": ["no node can ever hold this gang of 1 pod(s) (main: cpu=3 per pod)",
                  "pool p: n1 (cpu=2"]}),
    Case("a gang bigger than its pool", {"n1": 2}, [("gang", 1, 3), ("small", 2, 1)],
         {"gang": "Inactive", "small": "Admitted"},
         {"gang": ["gang of 3 pod(s)"]}),
    Case("a gang that fits once the node is free", {"n1": 2}, [("first", 2, 1),
                                                               ("second", 2, 1)],
         {"first": "Admitted", "second": "Admitted"}),
    Case("no node registered yet", {}, [("early", 3, 1)], {"early": "Admitted"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gangs_no_node_can_hold_are_set_aside_and_free_their_quota(case: Case) -> None:
    pool = SteppedPool()
    for name, cpu in case.nodes.items():
        node(pool.store, name, cpu=cpu)
    keys = {name: pool.submit(name, cpu=cpu, count=count)
            for name, cpu, count in case.workloads}
    pool.run(8)
    assert {name: pool.state(key) for name, key in keys.items()} == case.want_states
    for name, fragments in case.want_message.items():
        record = pool.store.workloads.get(keys[name])
        assert record.reason == "Inadmissible"
        for fragment in fragments:
            assert fragment in record.message


def test_a_set_aside_gang_is_tried_again_when_a_node_registers() -> None:
    pool = SteppedPool()
    node(pool.store, "n1", cpu=2)
    gang = pool.submit("gang", cpu=1, count=3)
    pool.run(8)
    assert pool.state(gang) == "Inactive"
    node(pool.store, "n2", cpu=2)
    pool.run(8)
    record = pool.store.workloads.get(gang)
    assert (record.state, len(record.placement)) == ("Admitted", 3)
    assert [h["event"] for h in pool.store.workloads.history(gang)][-4:] == [
        "Deactivated", "Activated", "Admitted", "Placed"]


def test_set_aside_gangs_run_once_their_flavor_names_nodes_that_exist() -> None:
    """A typo in a ResourceFlavor's ``nodeLabels`` matches no node: the gangs admitted
    on it are set aside. Fixing the flavor is taken in place, and they run."""
    from tests.integration.redis.harness import CQ, queues
    pool = SteppedPool()
    node(pool.store, "n1", cpu=4)  # (no labels)
    pool.client.apply(queues(CQ("cq", {"cpu": 4}), flavors={"default": {"pool": "gpu"}}))
    pool.run(2)
    gang = pool.submit("gang", cpu=1, count=2)
    pool.run(8)
    record = pool.store.workloads.get(gang)
    assert (record.state, record.reason) == ("Inactive", "Inadmissible")
    leader = pool.scheduler.leader
    pool.client.apply(queues(CQ("cq", {"cpu": 4})))  # the flavor without the labels
    pool.run(8)
    record = pool.store.workloads.get(gang)
    assert (record.state, len(record.placement)) == ("Admitted", 2)
    assert pool.scheduler.leader is leader, "taken in place"


def test_a_gang_set_aside_while_others_arrive_is_deactivated_in_redis_too() -> None:
    """The placer sets a gang aside after the step's decisions were written; the next
    step follows the new arrivals first. Their follow used to drop what the engine had
    said meanwhile (unless a node check came between): the gang stayed Admitted in Redis
    and Evicting in the engine for good."""
    pool = SteppedPool()
    node(pool.store, "n1", cpu=2)
    pool.run(2)  # (the first node check is over: none comes in the steps below)
    big = pool.submit("big", cpu=3)
    pool.run(1)
    for i in range(4):  # an arrival at every step
        pool.submit(f"o{i}", cpu=1)
        pool.run(1)
    assert pool.state(big) == "Inactive"
    assert pool.scheduler.leader.engine.records[big].state.value == "Inactive"
