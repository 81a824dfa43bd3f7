"""Health, readiness and metrics over HTTP: ``/healthz``, ``/readyz``, ``/metrics``.

``/healthz`` answers 200 while the process serves. ``/readyz`` answers 200
once this replica either leads with a rebuilt engine or stands by (a
standby is healthy; it serves the webhook and waits for the Lease).
``/metrics`` is the Prometheus text format from the operator's own registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp.web
from prometheus_client import CONTENT_TYPE_LATEST

if TYPE_CHECKING:
    from kuota.operator.loop import Operator


async def serve(operator: Operator, addr: str, port: int) -> aiohttp.web.AppRunner:
    async def healthz(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(text="ok")

    async def readyz(_: aiohttp.web.Request) -> aiohttp.web.Response:
        if operator.client is None:
            return aiohttp.web.Response(status=503, text="starting")
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
