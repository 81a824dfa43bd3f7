"""A reverse proxy that makes a real API server look overloaded or flaky, for tests.

:class:`FaultProxy` listens on 127.0.0.1 (plain HTTP) and forwards every
request to an upstream API server — the emulator, or a real kube-apiserver
in the real tier — streaming the answer back as it comes, so watches work
through it. On the way it applies the same fault rules as the emulator
(:mod:`tests.emulator.faults`, matched on the Kubernetes verb, resource,
namespace, name and subresource of the URL): a share of requests answers
429 with ``Retry-After``, 503, or nothing (the connection is reset); with
``after=True`` the request reaches the upstream, which carries it out, and
its answer is thrown away — the ambiguous failure only a proxy or the server
itself can produce. Everything else passes unchanged: status, headers
(minus hop-by-hop ones), body bytes (compressed ones too).

Use::

    with FaultProxy("https://127.0.0.1:6443", upstream_ssl=context) as proxy:
        proxy.faults.fail(status=429, retry_after=1, rate=0.1, times=None, verbs=ALL_VERBS)
        ... point the client at proxy.url (its bearer token is passed on) ...

It runs its own event loop in a thread, so synchronous tests, ``kubectl``
and in-process operators can all use it. Credentials: an ``Authorization``
header is forwarded as sent; client certificates end at the proxy, so
against a server that authenticates by certificate give the proxy one
(``upstream_ssl`` with ``load_cert_chain``), and every request carries that
identity. Protocol upgrades (``kubectl exec``, port-forward) are not
proxied.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
import threading
from collections.abc import Coroutine
from typing import Any, Self, TypeVar

import aiohttp
import aiohttp.web
import kmock

from tests.emulator.faults import RESET, Fault, Faults
from tests.emulator.server import parse_route, verb_of

T = TypeVar("T")

#: Headers that describe one connection, not the message (RFC 9110, 7.6.1), and the ones
#: aiohttp sets itself for the forwarded message.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                         "te", "trailer", "transfer-encoding", "upgrade", "host",
                         "content-length"})


def _forwardable(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}


class FaultProxy:
    """A fault-injecting reverse proxy in front of ``upstream`` (see the module docstring)."""

    def __init__(self, upstream: str, *, upstream_ssl: ssl.SSLContext | bool = True,
                 seed: int | None = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.upstream_ssl = upstream_ssl
        self.faults = Faults(seed)
        #: Requests forwarded upstream, and requests answered by a fault.
        self.forwarded = 0
        self.failed = 0
        self._port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: aiohttp.web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._closing: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Self:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,), daemon=True,
                                        name="fault-proxy")
        self._thread.start()
        if not ready.wait(10) or self._runner is None:
            raise RuntimeError("the fault proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        if self._thread is not None:
            self._thread.join(10)

    def _main(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._serve(ready))
        finally:
            self._loop.close()

    async def _serve(self, ready: threading.Event) -> None:
        self._closing = asyncio.Event()
        # No decompression: bodies pass through byte for byte, with their Content-Encoding.
        self._session = aiohttp.ClientSession(
            auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        app = aiohttp.web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{path:.*}", self._handle)
        # Cancelled when the client goes away: a watch's upstream stream is closed with it.
        runner = aiohttp.web.AppRunner(app, handler_cancellation=True, access_log=None,
                                       shutdown_timeout=0.5)
        await runner.setup()
        site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner
        ready.set()
        try:
            await self._closing.wait()
        finally:
            await runner.cleanup()
            await self._session.close()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run ``coro`` in the proxy's loop (for tests that reach into it)."""
        assert self._loop is not None
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro,
                                                                                self._loop)
        return future.result(timeout)

    # -- forwarding ------------------------------------------------------------------------
    async def _handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        route = parse_route(request.path)
        verb = verb_of(request.method, route, dict(request.query))
        where: tuple[str, str, str | None, str | None, str | None] | None = None
        if route.plural is not None and route.group is not None:
            where = (route.group, route.plural, route.namespace, route.name, route.subresource)
            fault = self.faults.take(verb, *where)
            if fault is not None:
                return await self._fail(request, fault, route.plural, route.name)
        assert self._session is not None
        body = await request.read()
        self.forwarded += 1
        async with self._session.request(
                request.method, self.upstream + request.path_qs, data=body or None,
                headers=_forwardable(request.headers), ssl=self.upstream_ssl,
                allow_redirects=False) as answer:
            if where is not None and verb != "watch" and answer.status < 400:
                fault = self.faults.take(verb, *where, after=True)
                if fault is not None:
                    await answer.read()  # the upstream finished its work; the answer is lost
                    return await self._fail(request, fault, route.plural or "", route.name)
            response = aiohttp.web.StreamResponse(status=answer.status, reason=answer.reason,
                                                  headers=_forwardable(answer.headers))
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def _fail(self, request: aiohttp.web.Request, fault: Fault, plural: str,
                    name: str | None) -> aiohttp.web.StreamResponse:
        self.failed += 1
        if fault.status == RESET:
            if request.transport is not None:
                request.transport.abort()
            # Nothing reaches the client any more; aiohttp needs a response all the same.
            return aiohttp.web.Response(status=499)
        error: kmock.KubernetesError = fault.error(plural, name)
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        return aiohttp.web.json_response(
            {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
             "code": error.status, "reason": error.reason, "message": error.message,
             "details": error.details or {}},
            status=error.status, headers=headers)
