"""An eviction decided while the victim ran, but written after it ended (issue 43).

The engine decides to preempt a running Workload; its ``Evicted`` write waits behind others;
meanwhile whoever runs it marks it ``Finished``. The write, guarded by the version the
operator last saw, conflicts; the Workload is read again. Kueue's eviction (a patch guarded
by the version its cache holds) fails on that conflict and the Workload stays finished —
never marked ``Evicted``, never counted as an eviction. Before the fix kuota re-read it and
wrote ``Evicted`` on top of ``Finished``: in a ×0.2 side-by-side run, 170 of its 571
evictions (205 of 329 in another) were of Workloads that had already ended.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from admission.events import Kind
from kuota.operator.client import ApiError
from kuota.operator.metrics import Metrics
from kuota.operator.names import Res
from kuota.operator.writer import Writer
from quota.lifecycle import State
from tests.unit.operator.test_operator_controller import leading, queues, workload


class Server:
    """Workloads as an API server keeps them: a status patch must carry the stored
    ``resourceVersion`` (409 otherwise); ``find`` reads the stored object."""

    def __init__(self, bodies: list[dict[str, Any]]) -> None:
        self.bodies = {b["metadata"]["name"]: copy.deepcopy(b) for b in bodies}
        self.version = 1000
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def bump(self, name: str) -> dict[str, Any]:
        self.version += 1
        body = self.bodies[name]
        body["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(body)

    async def patch(self, res: Res, name: str, patch: Any, namespace: str | None = None,
                    **_: Any) -> dict[str, Any]:
        stored = self.bodies[name]
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != stored["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        self.patches.append((name, copy.deepcopy(patch)))
        stored.setdefault("status", {}).update(patch.get("status") or {})
        return self.bump(name)

    async def create(self, res: Res, body: dict[str, Any], namespace: str | None = None,
                     ) -> dict[str, Any]:
        return body  # (Events)

    async def find(self, res: Res, name: str, namespace: str | None = None
                   ) -> dict[str, Any] | None:
        return copy.deepcopy(self.bodies.get(name))


def _finished(body: dict[str, Any]) -> dict[str, Any]:
    body.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": "Finished", "status": "True", "reason": "ByTest", "message": "By test runner"})
    return body


def _conditions(body: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (body.get("status") or {}).get("conditions") or []}


def _touched(body: dict[str, Any]) -> dict[str, Any]:
    body["metadata"].setdefault("labels", {})["touched"] = "yes"
    return body


@pytest.mark.parametrize(("change", "want_evicted", "want_low", "want_high"), [
    # The runner marks it Finished before the eviction is written (its watch event has not
    # reached the operator yet): read again on the conflict, it is seen finished, nothing
    # is written, and its quota is free for the preemptor.
    (_finished, False, State.FINISHED, State.ADMITTED),
    # Changed, but not finished: the eviction still lands.
    (_touched, True, State.PENDING, State.ADMITTED),  # (evicted and queued again)
], ids=["finished-meanwhile", "changed-meanwhile"])
def test_an_eviction_written_after_a_conflict(
        change: Any, want_evicted: bool, want_low: State, want_high: State) -> None:
    objects = queues("4")
    objects[2][1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    low = workload("low", 4, admitted=True)
    high = workload("high", 4)
    high["spec"]["priority"] = 100
    controller, _ = leading(*objects, ("Workload", low), ("Workload", high))
    engine = controller.engine
    assert engine is not None
    server = Server([low, high])

    async def run() -> None:
        writer = Writer(controller, server, Metrics())  # type: ignore[arg-type]
        engine.run_until_idle(1000)
        events = engine.drain_outbox()
        assert [(e.key, e.kind) for e in events] == [("ns/low", Kind.EVICTING)]
        change(server.bodies["low"])
        server.bump("low")
        writer.persist(events)
        await writer.drain()

    asyncio.run(run())
    assert (_conditions(server.bodies["low"]).get("Evicted") == "True") is want_evicted
    assert engine.records["ns/low"].state is want_low
    engine.run_until_idle(1001)
    assert engine.records["ns/high"].state is want_high
