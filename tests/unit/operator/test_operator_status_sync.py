"""The periodic status sync writes what changed since the last one, and only that.

A sync keeps the queues' figures and what each queue status was made of, and whether
any waiting workload was given a new reason since its last walk (it skips the walk
otherwise). What it skips must never be something to write: a queue whose workloads
changed, a status or a reason whose write failed, a reason given after an idle sync.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from admission.engine import Engine
from kuota.operator.client import ApiError
from kuota.operator.controller import Controller
from kuota.operator.metrics import Metrics
from kuota.operator.names import Res
from kuota.operator.writer import Writer
from tests.unit.operator.test_operator_controller import leading, queues, workload


class RecordingClient:
    """Answers a patch with the object patched, or refuses the next ones of a kind."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.patched: list[tuple[str, str]] = []
        self.refuse: dict[str, int] = {}

    async def patch(self, res: Res, name: str, patch: Any, namespace: str | None = None,
                    **_: Any) -> dict[str, Any]:
        if self.refuse.get(res.kind):
            self.refuse[res.kind] -= 1
            raise ApiError(500, "InternalError", "try again")
        self.patched.append((res.kind, name))
        key = f"{namespace}/{name}" if namespace else name
        body = copy.deepcopy(self.controller.objects.get(res.kind, key))
        assert body is not None
        body.setdefault("status", {}).update(patch.get("status") or {})
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        return body

    async def create(self, res: Res, body: dict[str, Any], namespace: str | None = None,
                     ) -> dict[str, Any]:
        return body  # (Events)


async def sync(writer: Writer, client: RecordingClient) -> list[tuple[str, str]]:
    """One status sync and the writes it started, finished."""
    before = len(client.patched)
    await writer.sync_statuses()
    await settle()
    return client.patched[before:]


def decided(controller: Controller, writer: Writer) -> Engine:
    """A cycle run ("small" admitted, "big" given a reason) and its decisions persisted."""
    engine = controller.engine
    assert engine is not None
    engine.run_until_idle(1000)
    writer.persist(engine.drain_outbox())
    return engine


async def settle() -> None:
    """Let the writes started finish (each is a task of its own)."""
    for _ in range(20):
        await asyncio.sleep(0)


def setup() -> tuple[Controller, Writer, RecordingClient]:
    controller, _ = leading(*queues("4"), ("Workload", workload("big", 8)),
                            ("Workload", workload("small", 1)))
    client = RecordingClient(controller)
    writer = Writer(controller, client, Metrics())  # type: ignore[arg-type]
    return controller, writer, client


def test_a_sync_after_nothing_changed_writes_nothing() -> None:
    async def run() -> None:
        _, writer, client = setup()
        first = await sync(writer, client)
        assert ("ClusterQueue", "team") in first and ("LocalQueue", "main") in first
        assert await sync(writer, client) == []
        assert await sync(writer, client) == []

    asyncio.run(run())


def test_a_queue_whose_workloads_changed_is_written_again() -> None:
    async def run() -> None:
        controller, writer, client = setup()
        engine = controller.engine
        assert engine is not None
        await sync(writer, client)
        await sync(writer, client)
        engine.run_until_idle(1000)  # "small" is admitted: the counts change
        writes = await sync(writer, client)
        assert ("ClusterQueue", "team") in writes and ("LocalQueue", "main") in writes
        team = controller.objects.get("ClusterQueue", "team")
        assert team is not None and team["status"]["admittedWorkloads"] == 1

    asyncio.run(run())


def test_a_queue_status_refused_is_written_at_the_next_sync() -> None:
    async def run() -> None:
        _, writer, client = setup()
        client.refuse["ClusterQueue"] = 1
        assert ("ClusterQueue", "team") not in await sync(writer, client)
        assert ("ClusterQueue", "team") in await sync(writer, client)
        assert await sync(writer, client) == []

    asyncio.run(run())


def test_a_reason_given_after_an_idle_sync_is_written() -> None:
    async def run() -> None:
        controller, writer, client = setup()
        engine = decided(controller, writer)  # "big" (8 cpu) cannot fit in 4: a reason
        assert ("Workload", "big") in await sync(writer, client)
        assert await sync(writer, client) == []
        controller.observe("Workload", workload("huge", 16))
        engine.run_until_idle(1001)
        writer.persist(engine.drain_outbox())
        assert ("Workload", "huge") in await sync(writer, client)
        assert await sync(writer, client) == []

    asyncio.run(run())


def test_a_reason_refused_is_written_at_a_later_sync() -> None:
    async def run() -> None:
        controller, writer, client = setup()
        decided(controller, writer)
        await settle()  # "small"'s admission written
        client.refuse["Workload"] = 1
        written = [await sync(writer, client) for _ in range(3)]
        assert ("Workload", "big") not in written[0]
        assert any(("Workload", "big") in w for w in written[1:])

    asyncio.run(run())
