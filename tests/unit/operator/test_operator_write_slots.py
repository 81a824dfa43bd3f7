"""When writes may start: queue status writes (a sync of 1,000 ClusterQueues has 2,000 of
them) have slots of their own, apart from the decisions', and no write starts while the
controller rebuilds in slices."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kuota.operator.metrics import Metrics
from kuota.operator.names import Res
from kuota.operator.settings import Options
from kuota.operator.writer import Writer
from tests.unit.operator.test_operator_controller import leading, queues, workload


class GatedClient:
    """Answers a patch with the object patched; ClusterQueue and LocalQueue status patches
    wait until :attr:`gate` opens (a slow API server)."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.gate = asyncio.Event()
        self.queue_writes_waiting = 0
        self.patched: list[tuple[str, str]] = []

    async def patch(self, res: Res, name: str, patch: Any, namespace: str | None = None,
                    **_: Any) -> dict[str, Any]:
        if res.kind in ("ClusterQueue", "LocalQueue"):
            self.queue_writes_waiting += 1
            await self.gate.wait()
        self.patched.append((res.kind, name))
        body = copy.deepcopy(self.objects[f"{res.kind}/{name}"])
        body.setdefault("status", {}).update(patch.get("status") or {})
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        return body

    async def create(self, res: Res, body: dict[str, Any], namespace: str | None = None,
                     ) -> dict[str, Any]:
        return body


def test_an_admission_is_written_while_queue_statuses_wait() -> None:
    objects = [*queues("4"), ("Workload", workload("w", 1))]
    controller, _ = leading(*objects)
    controller.options = Options(write_concurrency=1)  # one slot for each kind of write
    client = GatedClient({f"{kind}/{body['metadata']['name']}": body
                          for kind, body in objects})

    async def run() -> list[tuple[str, str]]:
        writer = Writer(controller, client, Metrics())  # type: ignore[arg-type]
        syncing = asyncio.create_task(writer.sync_statuses())
        while not client.queue_writes_waiting:
            await asyncio.sleep(0)
        engine = controller.engine
        assert engine is not None
        engine.run_until_idle(1000)
        writer.persist(engine.drain_outbox())
        for _ in range(100):  # the admission's write needs no queue write to end
            if ("Workload", "w") in client.patched:
                break
            await asyncio.sleep(0)
        written_first = list(client.patched)
        client.gate.set()
        await syncing
        return written_first

    assert asyncio.run(run()) == [("Workload", "w")]


def test_no_write_starts_while_paused() -> None:
    objects = [*queues("4"), ("Workload", workload("w", 1))]
    controller, _ = leading(*objects)
    client = GatedClient({f"{kind}/{body['metadata']['name']}": body
                          for kind, body in objects})
    client.gate.set()

    async def run() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        writer = Writer(controller, client, Metrics())  # type: ignore[arg-type]
        engine = controller.engine
        assert engine is not None
        engine.run_until_idle(1000)
        writer.pause()
        writer.persist(engine.drain_outbox())
        for _ in range(50):
            await asyncio.sleep(0)
        paused = list(client.patched)
        writer.resume()
        for _ in range(50):
            if client.patched:
                break
            await asyncio.sleep(0)
        return paused, list(client.patched)

    assert asyncio.run(run()) == ([], [("Workload", "w")])
