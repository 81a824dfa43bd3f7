"""The operator at run time: leadership, the initial list, the cycle loop, the status loop.

:class:`Operator` runs inside kopf's event loop (started by a startup
handler). Until it leads, watch events only refresh the object cache. When
it leads — at once when no Lease is configured — it:

1. lists every watched resource (list-then-watch: the watch may have missed
   things while another replica led) and merges the lists into the cache;
2. rebuilds the engine from the cache (:meth:`Controller.rebuild`), so every
   Workload that holds quota is counted before the first cycle;
3. runs the **cycle loop**: wait until something changed (or the engine's
   next timer), run cycles until idle — one at a time, each bounded, the loop
   free between two and the writer given what each decided
   (:meth:`Operator.run_cycles`); and the
   **status loop**: every ``status_interval`` write queue statuses and why
   workloads wait;
4. renews the Lease; when that fails it stops the loops, drops the engine
   and waits to lead again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
from collections.abc import Callable

import kopf

from admission.engine import Engine
from kuota.federation.federation import Federation
from kuota.operator import informer, kinds, kueue_api, names
from kuota.operator.client import ApiError, Client
from kuota.operator.controller import Controller
from kuota.operator.leader import Elector, label_own_pod
from kuota.operator.metrics import Metrics
from kuota.operator.settings import Options
from kuota.operator.writer import Writer

log = logging.getLogger(__name__)


class Refused(RuntimeError):
    """The operator must not run here (the message says why and what to do)."""

#: The longest the cycle loop sleeps with nothing to do (a safety net, not a timer).
IDLE_WAKEUP = 5.0
#: Seconds between looks for the CRD of a kind kuota queues that was not served.
KIND_RECHECK = 30.0
#: The longest one cycle nominates heads before it decides on those it has (seconds).
#: An ordinary cycle over 1,000 ClusterQueues nominates for tens of milliseconds.
CYCLE_MOST = 0.1


class Operator:
    def __init__(self, options: Options, *, clock: Callable[[], float] = time.time) -> None:
        self.options = options
        self.identity = options.identity or f"{socket.gethostname()}-{os.getpid()}"
        self._cycling = False
        #: The API server's name for kuota's own requests (the webhook lets it alone make
        #: the changes kuota.operator.guard keeps from users); None until known.
        self.username: str | None = None
        self.controller = Controller(options, clock=clock)
        self.federation = Federation(self.controller)
        self.controller.federation = self.federation
        self.metrics = Metrics()
        self.client: Client | None = None
        self.writer: Writer | None = None
        self.elector: Elector | None = None
        self._wake: asyncio.Event | None = None
        self._main: asyncio.Task[None] | None = None
        #: Set once this replica leads and its engine is rebuilt (readiness).
        self.ready = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self, info: kopf.ConnectionInfo, *,
                    login: Callable[[], kopf.ConnectionInfo | None] | None = None) -> None:
        """Start in the running loop; ``login`` gets fresh credentials after a 401."""
        self.client = Client(info, connections=self.options.write_concurrency + 8,
                             retry=self.options.api_retry, login=login,
                             on_retry=lambda reason: self.metrics.api_retries.labels(reason).inc())
        try:
            self.username = await self.client.username()
        except ApiError as exc:
            # Without it the webhook cannot tell kuota's own writes from users': it keeps
            # nothing from users then (and says so) rather than refuse kuota's.
            log.warning("who am I? %s: the webhook does not guard queued objects' updates",
                        exc)
        if names.SERVED == "kueue":
            problem = await kueue_api.refusal(self.client, time.time())
            if problem is not None:
                raise Refused(problem)
        self._wake = asyncio.Event()
        wake = self._wake
        self.controller.on_change = wake.set
        if self.options.lease_name:
            self.elector = Elector(self.client, name=self.options.lease_name,
                                   namespace=self.options.lease_namespace,
                                   identity=self.identity,
                                   duration=self.options.lease_duration,
                                   renew=self.options.lease_renew)
        self._main = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop leading: let writes in flight land (briefly), then free the Lease."""
        if self._main is not None:
            self._main.cancel()
            await asyncio.wait([self._main], timeout=5)
        if self.writer is not None:
            await self.writer.drain(timeout=3)
            self.writer.cancel()
        if self.elector is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.elector.release(), 3)
        if self.client is not None:
            await self.client.close()

    async def _run(self) -> None:
        assert self.client is not None
        # A container restarted in the same Pod keeps the label of its previous life.
        await label_own_pod(self.client, self.options.pod, leading=False)
        while True:
            if self.elector is not None:
                while not await self.elector.try_acquire():
                    await asyncio.sleep(self.options.lease_renew)
                log.info("leading as %s", self.identity)
            try:
                await self._lead()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("leading failed; starting over")
                await asyncio.sleep(1)
            finally:
                self.ready.clear()
                self.controller.stop_leading()
                if self.writer is not None:
                    self.writer.cancel()
                await label_own_pod(self.client, self.options.pod, leading=False)

    async def _lead(self) -> None:
        assert self.client is not None
        self.writer = Writer(self.controller, self.client, self.metrics, identity=self.identity)
        versions = await self.list_all()
        # In slices, yielding between them: the webhook and the probes answer meanwhile.
        self.writer.pause()
        for _ in self.controller.rebuilding(self.writer):
            await asyncio.sleep(0)
        self.writer.resume()
        self.ready.set()
        await label_own_pod(self.client, self.options.pod, leading=True)
        tasks = [asyncio.create_task(self._cycles()), asyncio.create_task(self._statuses()),
                 asyncio.create_task(self.federation.run(self.writer))]
        for (res, label), by_namespace in versions.items():
            for namespace, version in by_namespace.items():
                tasks.append(asyncio.create_task(
                    informer.run(self.client, self.controller, res, version,
                                 namespace=namespace, label=label)))
        missing = [kind.res for kind in kinds.KINDS.values()
                   if self.options.queues(kind.kind) and (kind.res, None) not in versions]
        if missing:
            tasks.append(asyncio.create_task(self._late_kinds(missing)))
        if self.elector is not None:
            tasks.append(asyncio.create_task(self._renew()))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def list_all(self) -> dict[tuple[names.Res, str | None], dict[str | None, str]]:
        """Read every watched resource into the object cache.

        Returns, for each (resource, label) kuota's informers watch, the list's
        resourceVersion per namespace (``None``: cluster-wide), where their watches start.
        A kind kuota queues whose CRD is not served is left out, with one log line
        (:meth:`_late_kinds` looks for it again).
        """
        versions: dict[tuple[names.Res, str | None], dict[str | None, str]] = {}
        listed: list[tuple[names.Res, str | None]] = [
            *((res, None) for res in names.KOPF_WATCHED.values()),
            *((kind.res, None) for kind in kinds.KINDS.values()
              if self.options.queues(kind.kind)),  # (integrations.frameworks)
            *((res, label) for res, label in names.INFORMED
              if self.options.queues_pod_groups or label not in names.POD_GROUP_LABELS)]
        for res, label in listed:
            try:
                by_namespace = await self._list(res, label)
            except ApiError as exc:
                if exc.status == 404:  # the CRD is not installed
                    if res.kind in kinds.KINDS:  # (one line: its objects are not queued yet)
                        log.warning("%s (%s) is not served here: kuota queues none until "
                                    "its CRD is installed (looked for every %.0f s)",
                                    res.kind, res.api_version, KIND_RECHECK)
                    else:
                        log.warning("cannot list %s: %s", res.plural, exc)
                    continue
                raise
            if res.kind not in names.KOPF_WATCHED:
                versions[(res, label)] = by_namespace
        return versions

    async def _list(self, res: names.Res, label: str | None) -> dict[str | None, str]:
        """List ``res`` into the object cache: its resourceVersion per namespace listed."""
        assert self.client is not None
        scopes: tuple[str | None, ...] = (None,)
        if res.namespaced and self.options.namespaces:
            scopes = self.options.namespaces
        out: dict[str | None, str] = {}
        for namespace in scopes:
            out[namespace] = await informer.relist(
                self.client, self.controller, res, (namespace,) if namespace else (),
                label=label)
        return out

    async def _late_kinds(self, missing: list[names.Res]) -> None:
        """Kinds whose CRD was not served when leading began, looked for again every
        :data:`KIND_RECHECK` seconds: once served, listed and watched like the others, so
        that their objects (suspended by the webhook meanwhile) get their Workloads."""
        assert self.client is not None
        watches: list[asyncio.Task[None]] = []
        try:
            while missing:
                await asyncio.sleep(KIND_RECHECK)
                for res in list(missing):
                    try:
                        by_namespace = await self._list(res, None)
                    except ApiError as exc:
                        if exc.status != 404:
                            log.warning("cannot list %s: %s", res.plural, exc)
                        continue
                    missing.remove(res)
                    log.info("%s (%s) is served now: kuota queues them", res.kind,
                             res.api_version)
                    watches += [asyncio.create_task(informer.run(
                        self.client, self.controller, res, version, namespace=namespace))
                        for namespace, version in by_namespace.items()]
            await asyncio.gather(*watches)  # (the watches run until leading ends)
        finally:
            for task in watches:
                task.cancel()

    # -- loops -------------------------------------------------------------------------------
    async def _cycles(self) -> None:
        assert self._wake is not None and self.writer is not None
        controller, wake = self.controller, self._wake
        while True:
            engine = controller.engine
            if engine is None:
                return
            now = controller.clock()
            wakeup = engine.next_wakeup()
            timeout = IDLE_WAKEUP if wakeup is None else min(IDLE_WAKEUP, max(0.0, wakeup - now))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout)
            wake.clear()
            self._cycling = True
            try:
                await self.run_cycles(engine)
            finally:
                self._cycling = False

    @property
    def settled(self) -> bool:
        """Leading with nothing due: no cycle asked for or running, no write in flight.
        (Tests wait for it before checking that something did *not* happen.)"""
        return self._wake is not None and not self._wake.is_set() and not self._cycling \
            and self.writer is not None and self.writer.idle

    async def run_cycles(self, engine: Engine) -> None:
        """Cycles until no head is left to try, yielding to the event loop after each.

        Between two cycles the webhook, the probes, the watches and the Lease's renewal are
        answered, and the writer starts on what the last cycle decided. A cycle nominates
        for at most :data:`CYCLE_MOST` before deciding on the heads it has; the next one
        starts with those it left (:meth:`Engine.schedule <admission.engine.Engine.schedule>`).
        Run until idle in one go, 50,000 waiting Workloads in 1,000 ClusterQueues held the
        loop for about 2 s, and a wave of preemptions for longer."""
        assert self.writer is not None
        controller, writer = self.controller, self.writer
        while controller.engine is engine:
            result = engine.schedule(controller.clock(), enough=functools.partial(
                _past, time.monotonic() + CYCLE_MOST))
            events = engine.drain_outbox()  # (a cycle with no head may still time something out)
            if events:
                self.federation.events(events)
                writer.persist(events)
            if not result.tried:
                return
            self.metrics.cycles.inc()
            await asyncio.sleep(0)

    async def _statuses(self) -> None:
        assert self.writer is not None
        while True:
            try:
                await self.writer.sync_statuses()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("status sync failed")
            await asyncio.sleep(self.options.status_interval)

    async def _renew(self) -> None:
        assert self.elector is not None
        while True:
            await asyncio.sleep(self.options.lease_renew)
            if not await self.elector.try_acquire():
                log.warning("lost the lease %s; standing by", self.options.lease_name)
                return


def _past(deadline: float) -> bool:
    return time.monotonic() >= deadline
