"""Run an emulated API server on 127.0.0.1 in a background thread, and drive it from tests.

:class:`Emulator` is the handle a test holds (the ``k8s_api`` fixture yields
one). It owns a thread with its own asyncio loop serving HTTP on a free port,
so synchronous tests, kopf's own loop in a ``KopfRunner`` thread, the
``kubernetes`` client and ``kubectl`` subprocesses all talk to it over a real
socket. Several emulators may run at once (one per member cluster); they share
nothing.

From the test's side:

* ``url`` — ``http://127.0.0.1:<port>``;
* ``create`` / ``get`` / ``list`` / ``patch`` / ``delete`` — seed and inspect
  objects by ``apiVersion`` and kind (or plural), straight in the store, with
  the same rules and watch events as API writes (seeding keeps ``status``);
* ``faults.fail(...)`` — make the next N matching requests fail (see :mod:`.faults`);
* ``pause()`` / ``resume()`` — requests (and watch events) hang meanwhile,
  like a partitioned network;
* ``stop()`` / ``start()`` — the listener goes away (connections refused, watch
  streams closed) and comes back on the same port with the same objects, like
  a member cluster that is lost and then recovers;
* ``handler`` — the kmock handler, for request assertions with kmock's DSL.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Self, TypeVar

import aiohttp.web
import kmock

from . import errors
from .faults import Faults
from .resources import Registry, ResourceType
from .rules import utc_now
from .server import KubeEmulator
from .store import MERGE_PATCH, Obj, Store

T = TypeVar("T")


class Emulator:
    """One emulated Kubernetes API server, served from a background thread."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime.datetime] = utc_now,
        require_namespaces: bool = True,
        seed: int | None = None,
        port: int = 0,
        bookmark_interval: float = 20.0,
        keep_requests: int | None = 10_000,
        history: int = 20_000,
    ) -> None:
        self.store = Store(Registry(), clock=clock, require_namespaces=require_namespaces,
                           seed=seed, history=history)
        self.faults = Faults()
        self._clock = clock
        self._port = port
        self._bookmark_interval = bookmark_interval
        self._keep_requests = keep_requests
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._handler: KubeEmulator | None = None
        self._runner: aiohttp.web.ServerRunner | None = None
        self._closing: asyncio.Future[None] | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Self:
        """Start serving (the first time: start the thread and pick a free port)."""
        if self._thread is None:
            ready = threading.Event()
            self._thread = threading.Thread(target=self._main, args=(ready,), daemon=True,
                                            name="k8s-emulator")
            self._thread.start()
            ready.wait(10)
            if self._handler is None:
                raise RuntimeError("the emulator thread did not start")
        if self._runner is None:
            self._call(self._listen())
        return self

    def stop(self) -> None:
        """Stop listening and close every connection; objects stay for a later start()."""
        if self._runner is not None:
            self._call(self._unlisten())

    def close(self) -> None:
        """Stop serving for good and end the thread."""
        if self._thread is None or self._loop is None:
            return
        self.stop()
        loop, closing = self._loop, self._closing
        assert closing is not None

        def finish() -> None:
            if not closing.done():
                closing.set_result(None)

        loop.call_soon_threadsafe(finish)
        self._thread.join(10)
        self._thread = None

    def pause(self) -> None:
        """Make requests and watch events wait until resume()."""
        self._in_loop(self.handler.pause)

    def resume(self) -> None:
        self._in_loop(self.handler.resume)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    @property
    def handler(self) -> KubeEmulator:
        if self._handler is None:
            raise RuntimeError("the emulator is not started")
        return self._handler

    def status_of(self, request: kmock.Request) -> int | None:
        """The HTTP status the emulator answered to a recorded request (None while open)."""
        return self.handler.statuses.get(request.id)

    @property
    def unexpected_errors(self) -> list[BaseException]:
        """Internal errors (bugs in the emulator, not Kubernetes errors) so far."""
        return list(self.handler.unexpected_errors)

    def _main(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(ready))
        finally:
            loop.close()

    async def _serve(self, ready: threading.Event) -> None:
        self._closing = asyncio.get_running_loop().create_future()
        handler = KubeEmulator(store=self.store, faults=self.faults, clock=self._clock,
                               bookmark_interval=self._bookmark_interval,
                               keep_requests=self._keep_requests)
        async with handler:
            self._handler = handler
            ready.set()
            await self._closing
            if self._runner is not None:
                await self._unlisten()

    async def _listen(self) -> None:
        server = aiohttp.web.Server(self.handler, handler_cancellation=True)
        runner = aiohttp.web.ServerRunner(server, shutdown_timeout=0.5)
        await runner.setup()
        site = aiohttp.web.TCPSite(runner, "127.0.0.1", self._port, reuse_address=True)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        self._port = sockets[0].getsockname()[1]
        self._runner = runner

    async def _unlisten(self) -> None:
        runner, self._runner = self._runner, None
        self.handler.end_streams()
        if runner is not None:
            await runner.cleanup()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        assert self._loop is not None
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    def _in_loop(self, fn: Callable[[], None]) -> None:
        async def run() -> None:
            fn()
        self._call(run())

    # --- objects --------------------------------------------------------------------------

    def resource(self, api_version: str, kind_or_plural: str) -> ResourceType:
        """The served type for ``("batch/v1", "Job")`` or ``("v1", "pods")``."""
        group, _, version = api_version.rpartition("/")
        rtype = self.store.registry.get(group, version, kind_or_plural)
        if rtype is None:
            rtype = next((t for t in self.store.registry.all()
                          if t.group == group and t.version == version
                          and kind_or_plural in (t.kind, t.plural)), None)
        if rtype is None:
            raise LookupError(f"the emulator serves no {kind_or_plural!r} in {api_version!r}")
        return rtype

    def create(self, obj: Obj, *, keep_status: bool = True) -> Obj:
        """Create an object from its manifest (apiVersion, kind, metadata...)."""
        rtype = self._type_of(obj)
        return self.store.create(rtype, obj.get("metadata", {}).get("namespace"), obj,
                                 keep_status=keep_status)

    def apply(self, *objs: Obj) -> list[Obj]:
        """Create each object, or merge-patch it (status too) if it exists."""
        result = []
        for obj in objs:
            rtype = self._type_of(obj)
            meta = obj.get("metadata", {})
            try:
                self.store.get(rtype, meta.get("namespace"), meta.get("name", ""))
            except kmock.KubernetesError as exc:
                if exc.status != 404:
                    raise
                result.append(self.create(obj))
                continue
            updated = self.store.patch(rtype, meta.get("namespace"), meta["name"],
                                       MERGE_PATCH, obj)
            if rtype.has_status and "status" in obj:
                updated = self.store.patch(rtype, meta.get("namespace"), meta["name"],
                                           MERGE_PATCH, {"status": obj["status"]},
                                           subresource="status")
            result.append(updated)
        return result

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        return self.store.get(self.resource(api_version, kind), namespace, name)

    def find(self, api_version: str, kind: str, name: str,
             namespace: str | None = None) -> Obj | None:
        """Like get(), but None when the object does not exist."""
        try:
            return self.get(api_version, kind, name, namespace)
        except kmock.KubernetesError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        items, _ = self.store.list_objects(self.resource(api_version, kind), namespace)
        return items

    def patch(self, api_version: str, kind: str, name: str, patch: Any, *,
              namespace: str | None = None, patch_type: str = MERGE_PATCH,
              subresource: str | None = None) -> Obj:
        return self.store.patch(self.resource(api_version, kind), namespace, name, patch_type,
                                patch, subresource=subresource)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str | None = None, grace_period: int | None = None) -> Obj:
        """DELETE as the API would: ``propagation`` None is the resource's default (Orphan
        for Jobs); ``grace_period=0`` on a terminating pod is the kubelet removing it."""
        return self.store.delete(self.resource(api_version, kind), namespace, name,
                                 propagation=propagation, grace_period=grace_period)

    def _type_of(self, obj: Obj) -> ResourceType:
        if not obj.get("apiVersion") or not obj.get("kind"):
            name = obj.get("metadata", {}).get("name", "<unnamed>")
            raise errors.bad_request(f"object {name!r} needs apiVersion and kind")
        return self.resource(obj["apiVersion"], obj["kind"])

    # --- waiting --------------------------------------------------------------------------

    def wait_for(self, predicate: Callable[[], T], *, timeout: float = 10.0,
                 interval: float = 0.02, what: str = "condition") -> T:
        """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not reached within {timeout}s")
            time.sleep(interval)


@contextlib.contextmanager
def emulators(count: int, **options: Any) -> Iterator[list[Emulator]]:
    """``count`` independent running emulators (e.g. member clusters), closed on exit."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(Emulator(**options)) for _ in range(count)]
