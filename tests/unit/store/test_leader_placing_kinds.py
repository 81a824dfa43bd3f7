"""Gangs that ask the nodes for the same thing wait in one line, whatever their queue.

What a gang asks of nodes is its pod sets, flavors and where it may go — not the queue it
came from. Gangs of one shape from many queues are one kind: when the first does not
fit, the others wait behind it (one try a round for the whole backlog), and when nodes
free up the earliest admitted goes first, from whichever queue.
"""

from __future__ import annotations

from typing import Any

import pytest

from kuota.service import placing
from tests.integration.redis.harness import CQ, queues
from tests.unit.store.store_builders import SteppedPool

TEAMS = ("a", "b", "c")


def pool_of_teams() -> SteppedPool:
    pool = SteppedPool()
    pool.client.apply(queues(*(CQ(team, {"cpu": 8}) for team in TEAMS)))
    pool.store.nodes.register("n1", pool="p", capacity={"cpu": 2000}, labels={}, devices=[],
                              now=pool.now)
    return pool


def submit(pool: SteppedPool, name: str, team: str) -> str:
    return pool.client.submit(["true"], queue=f"default/lq-{team}", name=name,
                              requests={"cpu": 2}).key


def test_a_backlog_of_one_shape_from_many_queues_costs_one_try_a_round(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pool = pool_of_teams()
    keys = [submit(pool, f"{team}{i}", team) for i in range(4) for team in TEAMS]
    pool.run(steps=8)
    placed = [k for k in keys if pool.store.workloads.get(k).placement]
    assert len(placed) == 1  # one node of 2 cpu: the rest wait for it
    tries: list[Any] = []
    gang_pods = placing.gang_pods
    monkeypatch.setattr(placing, "gang_pods",
                        lambda *args: tries.append(args) or gang_pods(*args))
    pool.run(steps=1)
    assert len(tries) == 1


def test_the_earliest_admitted_of_one_shape_is_placed_first_whatever_its_queue() -> None:
    pool = pool_of_teams()
    first = {team: submit(pool, f"{team}0", team) for team in TEAMS}
    second = submit(pool, "a1", "a")  # admitted after every team's first (a cycle later)
    pool.run(steps=4)
    assert pool.state(second) == "Admitted"
    assert pool.store.workloads.get(first["a"]).placement == ("n1",)
    pool.store.nodes.register("n2", pool="p", capacity={"cpu": 2000}, labels={}, devices=[],
                              now=pool.now)
    pool.run(steps=4, advance=1.0)
    assert pool.store.workloads.get(first["b"]).placement == ("n2",)
    assert pool.store.workloads.get(second).placement == ()


def test_why_a_gang_waits_for_nodes_is_told_again_when_the_nodes_change() -> None:
    """A node that registers changes no workload in the engine, but it changes why the
    gangs waiting for nodes wait: that is written too."""
    pool = pool_of_teams()
    submit(pool, "a0", "a")
    waiting = submit(pool, "a1", "a")
    pool.run(steps=6, advance=1.0)
    assert pool.store.workloads.get(waiting).message.endswith(
        "0/1 nodes are available: 1 Insufficient cpu.")
    pool.store.nodes.register("n2", pool="p", capacity={"cpu": 1000}, labels={}, devices=[],
                              now=pool.now)  # too small for it
    pool.run(steps=6, advance=1.0)
    assert pool.store.workloads.get(waiting).message.endswith(
        "0/2 nodes are available: 2 Insufficient cpu.")


def test_waiting_gangs_are_checked_for_lost_pinned_nodes_only_when_new_or_nodes_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A gang whose pinned nodes are gone is evicted at the node check; one checked already
    need not be again while the Ready nodes stay the same."""
    from kuota.service import topofeed
    checked: list[list[str]] = []
    lost_pins = topofeed.lost_pins
    monkeypatch.setattr(topofeed, "lost_pins", lambda engine, unplaced, ready: (
        checked.append(list(unplaced)) or lost_pins(engine, unplaced, ready)))
    pool = pool_of_teams()
    first = [submit(pool, f"{team}{i}", team) for i in range(2) for team in TEAMS]
    pool.run(steps=6, advance=1.0)  # (a node check every 5 s)
    assert len(pool.scheduler.leader.unplaced) == len(first) - 1
    checked.clear()
    late = submit(pool, "a9", "a")
    pool.run(steps=6, advance=1.0)
    assert checked and checked[0] == [late], "only the gang admitted since the last check"
    assert all(keys == [] for keys in checked[1:])
    pool.store.nodes.register("n2", pool="p", capacity={"cpu": 1000}, labels={}, devices=[],
                              now=pool.now)  # the Ready nodes changed: every gang again
    checked.clear()
    pool.run(steps=6, advance=1.0)
    assert len(checked[0]) == len(first)


def test_gangs_of_many_shapes_placed_in_one_round_each_get_their_own_pods_and_command(
        ) -> None:
    """Alike gangs share the pods and command the round makes for their shape (made once);
    gangs of another shape, count or command in the same round must not get those."""
    from kuota.service.jobs import decode, node_queue

    pool = pool_of_teams()
    pool.store.nodes.register("n2", pool="p", capacity={"cpu": 16000}, labels={}, devices=[],
                              now=pool.now)
    asked = {  # name -> (team, command, pods, cpu per pod)
        "a0": ("a", ["echo", "a"], 1, 1), "a1": ("a", ["echo", "a"], 1, 1),
        "b0": ("b", ["echo", "b"], 2, 1), "b1": ("b", ["echo", "b"], 1, 3),
        "c0": ("c", ["echo", "a"], 1, 1)}  # (c0: a0's shape, from another queue)
    keys = {name: pool.client.submit(command, queue=f"default/lq-{team}", name=name,
                                     count=pods, requests={"cpu": cpu}).key
            for name, (team, command, pods, cpu) in asked.items()}
    pool.run(steps=6)
    sent = [pod for node in ("n1", "n2")
            for job in node_queue(pool.connection.raw, pool.store.keys, node).get_jobs()
            for pod in decode(*job.args)]
    for name, (_, command, pods, cpu) in asked.items():
        mine = sorted((p for p in sent if p.pod_id.startswith(f"{keys[name]}:")),
                      key=lambda p: p.pod_id)
        assert [p.pod_id.rpartition(":")[2] for p in mine] == [str(i) for i in range(pods)]
        assert {p.command for p in mine} == {tuple(command)}
        assert [p.requests for p in mine] == [{"cpu": 1000 * cpu}] * pods
        assert all(p.pod_count == pods for p in mine)
