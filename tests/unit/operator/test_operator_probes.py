"""/readyz waits for the webhook's port: the Job webhook fails closed, so a replica that
is Ready before kopf's HTTPS server listens makes Job creation fail (seen in the real
tier: `connection refused` right after /readyz said ready)."""

from __future__ import annotations

import asyncio
import urllib.request
from types import SimpleNamespace
from typing import Any

from kuota.operator import probes
from tests.ports import free_port


def get(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_readyz_is_503_until_the_webhook_port_listens() -> None:
    async def scenario() -> list[tuple[int, str]]:
        ready = asyncio.Event()
        ready.set()
        operator: Any = SimpleNamespace(client=object(), ready=ready, metrics=None)
        probe_port, webhook_port = free_port(), free_port()
        runner = await probes.serve(operator, "127.0.0.1", probe_port,
                                    webhook=("0.0.0.0", webhook_port))
        seen = [await asyncio.to_thread(get, probe_port)]
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", webhook_port)
        seen.append(await asyncio.to_thread(get, probe_port))
        server.close()
        seen.append(await asyncio.to_thread(get, probe_port))  # remembered once seen
        await runner.cleanup()
        return seen

    assert asyncio.run(scenario()) == [(503, "webhook not listening yet"), (200, "leading"),
                                       (200, "leading")]
