"""The operator's cycle loop runs cycles one at a time: the event loop is free between two,
and what each decided goes to the writer before the next."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from admission.events import WorkloadEvent
from kuota.operator import loop
from kuota.operator.loop import Operator
from kuota.operator.settings import Options
from quota.lifecycle import State
from tests.unit.operator.test_operator_controller import API, FakeActions, meta, workload


class RecordingWriter:
    """Takes the events handed to it, noting how many hands there were."""

    def __init__(self) -> None:
        self.hands: list[list[WorkloadEvent]] = []

    def persist(self, events: list[WorkloadEvent]) -> None:
        self.hands.append(events)


def team(name: str, cpu: str) -> list[tuple[str, dict[str, Any]]]:
    """A namespace, its ClusterQueue of ``cpu`` and a LocalQueue "main" pointing at it."""
    return [
        ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name)}),
        ("ClusterQueue", {"apiVersion": API, "kind": "ClusterQueue", "metadata": meta(name),
                          "spec": {"namespaceSelector": {"matchLabels": {
                              "kubernetes.io/metadata.name": name}}, "resourceGroups": [
                              {"coveredResources": ["cpu"], "flavors": [{"name": "spot",
                               "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}),
        ("LocalQueue", {"apiVersion": API, "kind": "LocalQueue", "metadata": meta("main", name),
                        "spec": {"clusterQueue": name}}),
    ]


def in_namespace(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    body["metadata"]["namespace"] = namespace
    return body


def leading_operator(teams: int, each: int) -> tuple[Operator, RecordingWriter]:
    """An operator leading over ``teams`` ClusterQueues of 2 cpu, ``each`` 1-cpu Workloads
    waiting in each (so two of each are admitted, in two cycles)."""
    operator = Operator(Options(), clock=lambda: 1000.0)
    controller = operator.controller
    controller.observe("ResourceFlavor", {"apiVersion": API, "kind": "ResourceFlavor",
                                          "metadata": meta("spot"), "spec": {}})
    for t in range(teams):
        for kind, body in team(f"t{t}", "2"):
            controller.observe(kind, body)
        for w in range(each):
            controller.observe("Workload", in_namespace(workload(f"w{w}", 1), f"t{t}"))
    controller.rebuild(FakeActions())
    writer = RecordingWriter()
    operator.writer = writer  # type: ignore[assignment]
    return operator, writer


async def cycles_beside_a_ticker(operator: Operator) -> list[int]:
    """Runs the cycles beside a task that notes, each time it runs, how many cycles ran."""
    seen: list[int] = []

    async def ticker() -> None:
        while True:
            seen.append(int(operator.metrics.cycles._value.get()))
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    engine = operator.controller.engine
    assert engine is not None
    await operator.run_cycles(engine)
    task.cancel()
    return seen


def test_the_loop_is_free_between_two_cycles_and_each_cycles_decisions_are_written() -> None:
    operator, writer = leading_operator(teams=3, each=3)
    seen = asyncio.run(cycles_beside_a_ticker(operator))
    engine = operator.controller.engine
    assert engine is not None
    admitted = [k for k, r in engine.records.items() if r.state is State.ADMITTED]
    assert len(admitted) == 6  # two of each team's three
    # Three cycles (one head per queue each; the third finds no room): the other task ran
    # after each.
    assert seen == [0, 1, 2, 3]
    assert [len(hand) for hand in writer.hands] == [3, 3]
    assert {e.key for hand in writer.hands for e in hand} == set(admitted)


def test_a_cycle_that_nominates_too_long_is_cut_and_the_next_one_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop, "CYCLE_MOST", 0.0)  # every cycle ends after one nomination
    operator, writer = leading_operator(teams=3, each=3)
    seen = asyncio.run(cycles_beside_a_ticker(operator))
    # One head a cycle, in the queues' turn: t0 t1 t2, t0 t1 t2.
    order = [hand[0].key for hand in writer.hands]
    assert order == [f"t{t}/w{w}" for w in range(2) for t in range(3)]
    # The other task ran after every cycle: six that admitted, three that found no room.
    assert seen == list(range(10))


def test_it_stops_when_the_engine_is_dropped() -> None:
    operator, writer = leading_operator(teams=3, each=3)
    engine = operator.controller.engine
    assert engine is not None

    async def lose_the_lead() -> None:  # (runs after the first cycle)
        operator.controller.engine = None

    async def both() -> None:
        await asyncio.gather(operator.run_cycles(engine), lose_the_lead())

    asyncio.run(both())
    assert len(writer.hands) == 1
