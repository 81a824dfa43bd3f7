"""The dashboard's HTTP server (aiohttp): read-only pages, live by server-sent events.

One task reads the store every ``interval`` seconds (in a worker thread: a
read rebuilds an engine) and keeps the newest :class:`~kuota.dashboard.model.Overview`.
When it differs from the previous one the *version* goes up and every browser
listening on ``/events`` is told; the page's script then fetches its own URL
with ``?fragment=1`` and swaps the ``<main>`` element — no reload, no state in
the browser. Requests render from the kept overview (rendered fragments are
cached per version), so a page costs a render, never a store read; only a
workload's page reads its record and history when asked. On a large store
the reads pace themselves: the next starts no sooner than the last one took.

Routes: ``/`` (overview), ``/clusterqueues/NAME``, ``/localqueues/NS/NAME``,
``/workloads/NS/NAME`` — plain links that can be shared — its pods' output at
``/workloads/NS/NAME/logs`` (Redis mode), and ``/events``,
``/version``, ``/healthz``, ``/static/…``. Only GET (and HEAD) exist: nothing
on the server writes. Pages carry a Content-Security-Policy that allows only
this origin's script and stylesheet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from aiohttp import web

from kuota.dashboard import render
from kuota.dashboard.model import Overview
from kuota.dashboard.source import LogSource, Source

log = logging.getLogger(__name__)

#: Rendered fragments kept (by URL and version).
CACHED_FRAGMENTS = 64
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE = 15.0
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class Dashboard:
    def __init__(self, source: Source, *, interval: float = 1.0) -> None:
        self.source = source
        self.interval = interval
        self.overview: Overview | None = None
        self.version = 0
        #: Why the last read failed ("" when it did not); shown on every page.
        self.error = ""
        self.read_seconds = 0.0
        self._changed = asyncio.Event()
        self._ready = asyncio.Event()
        self._stopping = False
        self._fragments: OrderedDict[tuple[str, int], str] = OrderedDict()

    # -- reading ------------------------------------------------------------------------------
    async def refresh_forever(self) -> None:
        while not self._stopping:
            started = time.monotonic()
            await self.refresh()
            self.read_seconds = time.monotonic() - started
            await asyncio.sleep(max(self.interval - self.read_seconds, self.read_seconds, 0.05))

    async def refresh(self) -> None:
        try:
            fresh = await asyncio.to_thread(self.source.overview)
        except Exception as exc:  # the store went away: keep the last picture, say why
            error = f"cannot read {self.source.description}: {type(exc).__name__}: {exc}"
            if error != self.error:
                log.warning("%s", error)
                self.error = error
                self._bump()
            self._ready.set()
            return
        if fresh != self.overview or self.error:
            self.overview, self.error = fresh, ""
            self._bump()
        self._ready.set()

    def _bump(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    # -- pages --------------------------------------------------------------------------------
    async def page(self, request: web.Request, title: str,
                   fragment: Callable[[Overview], str | None],
                   cached: bool = True) -> web.Response:
        await self._ready.wait()
        overview = self.overview
        version = self.version
        key = (request.path_qs.replace("fragment=1", ""), version)
        text = self._fragments.get(key) if cached else None
        if text is None:
            body = await asyncio.to_thread(fragment, overview) if overview is not None else ""
            if body is None:
                return self._respond(request, title, render.not_found(f"{title} does not exist."),
                                     version, status=404)
            text = self._banner() + body
            if cached:
                self._fragments[key] = text
                while len(self._fragments) > CACHED_FRAGMENTS:
                    self._fragments.popitem(last=False)
        return self._respond(request, title, text, version)

    def _banner(self) -> str:
        return f'<p class="problem">{render.e(self.error)}</p>' if self.error else ""

    def _respond(self, request: web.Request, title: str, fragment: str, version: int,
                 status: int = 200) -> web.Response:
        if request.query.get("fragment") == "1":
            text = fragment
        else:
            text = render.layout(title, fragment, version=str(version),
                                 source=self.source.description)
        return web.Response(text=text, content_type="text/html", status=status,
                            headers={"X-Kuota-Version": str(version), "Cache-Control": "no-store"})

    async def overview_page(self, request: web.Request) -> web.Response:
        return await self.page(request, "Overview", render.overview_page)

    async def cluster_queue(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            number = int(request.query.get("page", "0"))
        except ValueError:
            raise web.HTTPBadRequest(text="page: not a number") from None
        return await self.page(request, f"ClusterQueue {name}",
                               lambda ov: render.cluster_queue_page(ov, name, number))

    async def local_queue(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        return await self.page(request, f"LocalQueue {key}",
                               lambda ov: render.local_queue_page(ov, key))

    async def workload(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"

        def fragment(ov: Overview | None) -> str | None:
            found = self.source.workload(key, ov)
            return None if found is None else render.workload_page(found)

        return await self.page(request, f"Workload {key}", fragment, cached=False)

    async def logs(self, request: web.Request) -> web.Response:
        """A workload's pods' output as plain text (Redis mode; 404 where none is kept)."""
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        text = await asyncio.to_thread(self.source.logs, key) \
            if isinstance(self.source, LogSource) else None
        if text is None:
            return web.Response(text=f"no output kept for workload {key}\n", status=404)
        return web.Response(text=text, content_type="text/plain", charset="utf-8",
                            headers={"Cache-Control": "no-store"})

    # -- live ---------------------------------------------------------------------------------
    async def events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store",
                                               "X-Accel-Buffering": "no"})
        await response.prepare(request)
        sent = None
        with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
            while not self._stopping:
                changed = self._changed
                if self.version != sent and self._ready.is_set():
                    sent = self.version
                    await response.write(f"data: {sent}\n\n".encode())
                else:
                    await response.write(b": keepalive\n\n")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), KEEPALIVE)
        return response

    async def version_text(self, request: web.Request) -> web.Response:
        await self._ready.wait()
        return web.Response(text=str(self.version), headers={
            "Cache-Control": "no-store", "X-Kuota-Read-Seconds": f"{self.read_seconds:.3f}"})

    async def healthz(self, request: web.Request) -> web.Response:
        if self.error:
            return web.Response(text=self.error, status=503)
        return web.Response(text="ok" if self._ready.is_set() else "starting",
                            status=200 if self._ready.is_set() else 503)

    def stop(self) -> None:
        self._stopping = True
        self._changed.set()


def _static(text: Callable[[], str], content_type: str
            ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=text(), content_type=content_type,
                            headers={"Cache-Control": "max-age=300"})
    return handler


@web.middleware
async def _headers(request: web.Request,
                   handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                   ) -> web.StreamResponse:
    response = await handler(request)
    if not response.prepared:
        response.headers.update(HEADERS)
    return response


def application(dashboard: Dashboard) -> web.Application:
    app = web.Application(middlewares=[_headers])
    app.router.add_get("/", dashboard.overview_page)
    app.router.add_get("/clusterqueues/{name}", dashboard.cluster_queue)
    app.router.add_get("/localqueues/{namespace}/{name}", dashboard.local_queue)
    app.router.add_get("/workloads/{namespace}/{name}", dashboard.workload)
    app.router.add_get("/workloads/{namespace}/{name}/logs", dashboard.logs)
    app.router.add_get("/events", dashboard.events)
    app.router.add_get("/version", dashboard.version_text)
    app.router.add_get("/healthz", dashboard.healthz)
    app.router.add_get("/static/dashboard.css", _static(render.stylesheet, "text/css"))
    app.router.add_get("/static/dashboard.js",
                       _static(render.script, "application/javascript"))
    refresher: list[asyncio.Task[None]] = []

    async def start(app: web.Application) -> None:
        refresher.append(asyncio.create_task(dashboard.refresh_forever()))

    async def shutdown(app: web.Application) -> None:
        dashboard.stop()
        for task in refresher:
            task.cancel()

    app.on_startup.append(start)
    app.on_shutdown.append(shutdown)
    return app


async def serve(dashboard: Dashboard, host: str, port: int,
                started: Callable[[str], None]) -> None:
    """Serve until cancelled; ``started`` gets the URL once the socket listens."""
    runner = web.AppRunner(application(dashboard), shutdown_timeout=2.0,
                           handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or ()
        bound = sockets[0].getsockname()[1] if sockets else port
        shown = f"[{host}]" if ":" in host else host
        started(f"http://{shown}:{bound}/")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
