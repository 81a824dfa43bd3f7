"""Health, readiness and metrics over HTTP: ``/healthz``, ``/readyz``, ``/metrics``.

``/healthz`` answers 200 while the process serves. ``/readyz`` answers 200
once this replica either leads with a rebuilt engine or stands by (a
standby is healthy; it serves the webhook and waits for the Lease) — and, when
it serves the webhook, once the webhook's port accepts connections: the Job
webhook fails closed, so a replica must not receive webhook traffic (become a
Ready endpoint) before kopf's HTTPS server listens.
``/metrics`` is the Prometheus text format from the operator's own registry.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp.web
from prometheus_client import CONTENT_TYPE_LATEST

if TYPE_CHECKING:
    from kuota.operator.loop import Operator


async def serve(operator: Operator, addr: str, port: int, *,
                webhook: tuple[str, int] | None = None) -> aiohttp.web.AppRunner:
    listening = webhook is None

    async def webhook_listens() -> bool:
        # Checked until it first succeeds: the server does not stop listening later,
        # and every probe would otherwise cost the webhook a half-open connection.
        nonlocal listening
        if not listening and webhook is not None:
            host = "127.0.0.1" if webhook[0] in ("", "0.0.0.0", "::") else webhook[0]
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, webhook[1]), 1)
            except (OSError, TimeoutError):
                return False
            writer.close()
            listening = True
        return listening

    async def healthz(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(text="ok")

    async def readyz(_: aiohttp.web.Request) -> aiohttp.web.Response:
        if operator.client is None:
            return aiohttp.web.Response(status=503, text="starting")
        if not await webhook_listens():
            return aiohttp.web.Response(status=503, text="webhook not listening yet")
        role = "leading" if operator.ready.is_set() else "standing by"
        return aiohttp.web.Response(text=role)

    async def metrics(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(body=operator.metrics.render(),
                                    headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = aiohttp.web.Application()
    app.add_routes([aiohttp.web.get("/healthz", healthz), aiohttp.web.get("/readyz", readyz),
                    aiohttp.web.get("/metrics", metrics)])
    runner = aiohttp.web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await aiohttp.web.TCPSite(runner, addr, port).start()
    return runner
