"""Watch streams: ``GET ...?watch=true`` as newline-delimited JSON events.

Where a stream starts:

* ``resourceVersion=X`` (X > 0): every change after X from the store's log,
  then live changes — what kopf and ``kubectl get -w`` do after a list;
* no resourceVersion or ``0``: the current objects as ``ADDED`` events first;
  with ``sendInitialEvents=true`` a ``BOOKMARK`` annotated
  ``k8s.io/initial-events-end`` then marks the end of that initial state;
* X older than the retained log: a single ``ERROR`` event with a 410 Status
  (clients relist, as they do with a real server).

Selectors apply to both sides of a change, as in Kubernetes: an object that
stops matching arrives as ``DELETED``, one that starts matching as ``ADDED``.
With ``allowWatchBookmarks=true`` a ``BOOKMARK`` carrying the current
resourceVersion is sent after ``bookmark_interval`` seconds of silence;
``timeoutSeconds`` ends the stream cleanly. The response has a JSON content
type (kubectl ``get -w`` needs it) and may carry Tables instead of objects.

Events come from the store's thread-safe callback and are handed to this
event loop with ``call_soon_threadsafe``; a ``None`` in the queue ends the
stream (the emulator is stopping).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp.web
import kmock

from . import errors
from .resources import ResourceType
from .selectors import Matcher
from .store import Event, Obj, Store

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def transition(event: Event, matches: Matcher) -> str | None:
    """The event type a selective watcher sees for this change, or None to skip it."""
    now = matches(event.obj)
    before = event.prev is not None and matches(event.prev)
    if event.type == "MODIFIED":
        return "MODIFIED" if now and before else "ADDED" if now else \
            "DELETED" if before else None
    return event.type if now else None


def _status_event(exc: kmock.KubernetesError) -> dict[str, Any]:
    return {"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "code": exc.status, "reason": exc.reason, "message": exc.message,
    }}


async def serve(
    raw_request: aiohttp.web.BaseRequest,
    *,
    store: Store,
    rtype: ResourceType,
    namespace: str | None,
    matches: Matcher,
    render: Callable[[Obj], Obj],
    params: dict[str, str],
    running: Callable[[], Awaitable[None]],
    streams: set[asyncio.Queue[Event | None]],
    bookmark_interval: float = 20.0,
) -> aiohttp.web.StreamResponse:
    """Stream events until the client leaves, the timeout passes or the server stops."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    initial = params.get("sendInitialEvents") == "true"
    raw_since = params.get("resourceVersion") or "0"
    if not raw_since.isdigit():
        raise errors.bad_request(f"invalid resourceVersion {raw_since!r}: not a number")
    since = None if raw_since == "0" or initial else int(raw_since)
    bookmarks = params.get("allowWatchBookmarks") == "true"
    timeout = float(params["timeoutSeconds"]) if params.get("timeoutSeconds") else None

    response = aiohttp.web.StreamResponse(
        status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    def deliver(event: Event) -> None:  # runs in whichever thread wrote the change
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, event)

    try:
        backlog, unsubscribe = store.watch(rtype, namespace, since, deliver)
    except kmock.KubernetesError as exc:  # too old: an ERROR event, as the real server does
        await response.prepare(raw_request)
        await response.write(json.dumps(_status_event(exc)).encode() + b"\n")
        await response.write_eof()
        return response

    streams.add(queue)
    deadline = None if timeout is None else loop.time() + timeout

    async def send(kind: str, obj: Obj) -> None:
        await running()
        await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

    def bookmark(*, initial_end: bool = False) -> Obj:
        meta: dict[str, Any] = {"resourceVersion": str(store.resource_version)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}

    try:
        await response.prepare(raw_request)
        for old in backlog:
            if kind := transition(old, matches):
                await send(kind, render(old.obj))
        if initial:
            await send("BOOKMARK", bookmark(initial_end=True))
        while True:
            wait = bookmark_interval if bookmarks else None
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    break
                wait = left if wait is None else min(wait, left)
            try:
                async with asyncio.timeout(wait):
                    event = await queue.get()
            except TimeoutError:
                if bookmarks and (deadline is None or loop.time() < deadline):
                    await send("BOOKMARK", bookmark())
                continue
            if event is None:
                break
            if kind := transition(event, matches):
                await send(kind, render(event.obj))
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
    except ConnectionError:
        pass  # the client went away
    finally:
        unsubscribe()
        streams.discard(queue)
    return response
