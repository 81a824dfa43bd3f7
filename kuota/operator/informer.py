"""List-then-watch for the busy kinds (Jobs, Workloads), without kopf's per-event machinery.

kopf runs every watch event through its handler framework (per-object
workers, diff bases, progress storage), which costs about as much CPU as
everything kuota does with the event. For the queue objects that is
nothing; for Jobs and Workloads — hundreds of events per second when many
Jobs arrive at once — it halved the admission rate. So these two kinds are
watched here, the way client-go's informers do it: list, then watch from
the list's resourceVersion, follow bookmarks, and on 410 Gone (the version
is too old) list again. Events go to the same :meth:`Controller.observe`.

A watch (or list) that fails is started again after a pause that doubles
with each failure in a row, jittered, capped, and never shorter than the
server's ``Retry-After``: a throttled or restarting API server is not hit by
every informer at once, every half second.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

from kuota.operator.client import ApiError, Client
from kuota.operator.controller import Controller
from kuota.operator.names import Res
from kuota.operator.objects import key_of
from kuota.operator.retries import backoff as paced

log = logging.getLogger(__name__)
Body = dict[str, Any]


def _has_label(key: str | None) -> Callable[[Body], bool] | None:
    if key is None:
        return None
    return lambda body: key in ((body.get("metadata") or {}).get("labels") or {})


async def relist(client: Client, controller: Controller, res: Res,
                 namespaces: tuple[str, ...] = (), *, label: str | None = None) -> str:
    """Merge a full list into the cache (deletions included); returns the list's version.

    ``label``: list only objects carrying this label key.
    """
    scopes: tuple[str | None, ...] = namespaces if res.namespaced and namespaces else (None,)
    version = ""
    for namespace in scopes:
        items, version = await client.list(res, namespace, label_selector=label)
        for item in items:
            controller.observe(res.kind, item)
        if namespace is None:
            listed = {key_of(i) for i in items}
            for gone in controller.objects.forget_missing(res.kind, listed, version,
                                                          within=_has_label(label)):
                controller.observe(res.kind, gone, deleted=True)
    return version


async def run(client: Client, controller: Controller, res: Res, version: str, *,
              namespace: str | None = None, label: str | None = None,
              backoff: float = 0.5, max_backoff: float = 30.0) -> None:
    """Watch ``res`` from ``version`` forever (until cancelled)."""
    failures = 0
    expired = False
    rng = random.Random()
    while True:
        try:
            if expired:
                version = await relist(client, controller, res,
                                       (namespace,) if namespace else (), label=label)
                expired = False
            async for event in client.watch(res, version, namespace, label_selector=label):
                failures = 0
                obj = event.get("object") or {}
                new_version = (obj.get("metadata") or {}).get("resourceVersion")
                if new_version:
                    version = str(new_version)
                if event.get("type") == "BOOKMARK":
                    continue
                controller.observe(res.kind, obj, deleted=event.get("type") == "DELETED")
        except ApiError as exc:
            if exc.status == 410:
                log.info("watch of %s expired; listing again", res.plural)
                expired = True
                continue
            failures += 1
            pause = paced(failures, base=backoff, cap=max_backoff, rng=rng,
                          retry_after=exc.retry_after)
            log.warning("watch of %s failed: %s; again in %.1fs", res.plural, exc, pause)
            await asyncio.sleep(pause)
