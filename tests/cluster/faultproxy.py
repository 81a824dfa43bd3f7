"""A reverse proxy that makes a real API server look overloaded and flaky.

It sits between a client under test and kube-apiserver, terminates TLS with
a certificate of the test CA, forwards every request (watch streams too, a
chunk at a time) and, for a seeded random share of them, answers instead:

* ``429 Too Many Requests`` with ``Retry-After: 1`` and a Status body, as API
  Priority and Fairness does when a priority level's queues are full;
* ``503 Service Unavailable``, as an API server shutting down or an
  overloaded load balancer does;
* after forwarding, a dropped connection instead of the answer (``lost``):
  the write happened, the client never hears of it.

It runs in a thread with its own event loop; :attr:`FaultProxy.counts` says
what it did. Clients authenticate with their own bearer tokens, passed
through unchanged, so RBAC still applies.
"""

from __future__ import annotations

import asyncio
import collections
import json
import pathlib
import random
import ssl
import threading
from typing import Any

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

from tests.integration.redis.server import free_port

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "host", "content-length"}


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    headers = {"Retry-After": "1"} if code == 429 else {}
    return web.Response(status=code, text=json.dumps(body), content_type="application/json",
                        headers=headers)


class FaultProxy:
    """Forward to ``upstream``; fail ``rates`` of requests ({"429": 0.1, "503": 0.05, ...})."""

    def __init__(self, upstream: str, *, ca: pathlib.Path, cert: pathlib.Path,
                 key: pathlib.Path, rates: dict[str, float], seed: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.rates = dict(rates)
        self.enabled = True
        self.counts: collections.Counter[str] = collections.Counter()
        self._random = random.Random(seed)
        self._client_tls = ssl.create_default_context(cafile=str(ca))
        self._server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server_tls.load_cert_chain(str(cert), str(key))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="fault-proxy")
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        self._session = ClientSession(connector=TCPConnector(ssl=self._client_tls),
                                      timeout=ClientTimeout(total=None, sock_connect=5),
                                      auto_decompress=False)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port,
                          ssl_context=self._server_tls).start()

    async def _stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()
        if self._session:
            await self._session.close()

    def _fault(self) -> str | None:
        if not self.enabled:
            return None
        roll = self._random.random()
        for fault, rate in self.rates.items():
            if roll < rate:
                return fault
            roll -= rate
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        fault = self._fault()
        self.counts["requests"] += 1
        if fault == "429":
            self.counts["429"] += 1
            return _status(429, "TooManyRequests", "fault proxy: too many requests, "
                           "please try again later")
        if fault == "503":
            self.counts["503"] += 1
            return _status(503, "ServiceUnavailable", "fault proxy: unavailable")
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        async with self._session.request(request.method, self.upstream + request.path_qs,
                                         headers=headers, data=body or None) as upstream:
            if fault == "lost":
                self.counts["lost"] += 1
                await upstream.read()
                assert request.transport is not None
                request.transport.close()  # the client never sees the answer
                return web.Response(status=599)
            answer = web.StreamResponse(status=upstream.status, headers={
                k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP})
            await answer.prepare(request)
            async for chunk in upstream.content.iter_any():
                await answer.write(chunk)
            await answer.write_eof()
            return answer

    def snapshot(self) -> dict[str, Any]:
        return dict(self.counts)
