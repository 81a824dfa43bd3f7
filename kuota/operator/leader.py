"""Leader election with a ``coordination.k8s.io/v1`` Lease: one replica decides.

Every replica watches and serves the webhook; only the holder of the Lease
runs admission cycles and writes decisions. A replica takes the Lease when
it is free, held by itself, or not renewed for ``leaseDurationSeconds``;
every write carries the resourceVersion it read, so two replicas racing for
an expired Lease cannot both win (the loser gets 409). The holder renews
every ``renew`` seconds and steps down as soon as a renewal fails — before
the Lease can expire and someone else take it, since ``renew`` is well
below the duration. On a clean shutdown it clears the holder so a standby
takes over at once.

That promise needs every attempt to end in time. The Lease written at
``t`` expires at ``t + duration``; the attempt that wrote it ends by ``t +
D`` (D: the longest an attempt may take), the next one starts ``renew``
later and, failing, ends by ``t + 2D + renew``. So an attempt — its requests
and the client's retries of them — is cut off after ``D = (duration -
renew) / 3``, and ``2D + renew`` stays a third of the margin below the
duration. A slow or throttled API server thus costs the lease, never a
second leader.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable
from typing import Any

from kuota.operator import names
from kuota.operator.client import ApiError, Client
from kuota.operator.retries import RetryPolicy

log = logging.getLogger(__name__)


def micro_time(at: float) -> str:
    moment = datetime.datetime.fromtimestamp(at, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> float:
    if not text:
        return 0.0
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


#: The label the leader puts on its own Pod; the visibility Service selects it, since only
#: the leader knows the queues (:mod:`kuota.operator.visibility`).
LEADER_LABEL = "kuota.dev/leader"


async def label_own_pod(client: Client, pod: tuple[str, str] | None, leading: bool) -> None:
    """Put the leader label on this replica's Pod (namespace, name), or take it off.

    Outside a Pod (no ``POD_NAMESPACE``/``POD_NAME`` from the downward API) there is
    nothing to label. A failure is logged, not raised: leading does not depend on it,
    only whether pending positions can be read meanwhile."""
    if pod is None:
        return
    namespace, name = pod
    patch = {"metadata": {"labels": {LEADER_LABEL: "true" if leading else None}}}
    try:
        await client.patch(names.PODS, name, patch, namespace)
    except ApiError as exc:
        log.warning("cannot %s the label %s on Pod %s/%s: %s",
                    "set" if leading else "remove", LEADER_LABEL, namespace, name, exc)


class Elector:
    def __init__(self, client: Client, *, name: str, namespace: str, identity: str,
                 duration: float, renew: float, clock: Callable[[], float] = time.time) -> None:
        #: The longest one attempt may take (module docstring).
        self.deadline = max(0.05, (duration - renew) / 3)
        self.client = client.with_retry(RetryPolicy(
            attempts=4, pause=self.deadline / 8, max_pause=self.deadline / 2,
            budget=self.deadline))
        self.name, self.namespace, self.identity = name, namespace, identity
        self.duration = duration
        self.clock = clock

    def _spec(self, lease: dict[str, Any] | None, now: float) -> dict[str, Any]:
        old = (lease or {}).get("spec") or {}
        mine = old.get("holderIdentity") == self.identity
        return {"holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.duration)),
                "acquireTime": old.get("acquireTime") if mine else micro_time(now),
                "renewTime": micro_time(now),
                "leaseTransitions": int(old.get("leaseTransitions") or 0) + (0 if mine else 1)}

    async def try_acquire(self) -> bool:
        """Take or renew the Lease; False if another replica holds it, won the race, or the
        API server did not answer within :attr:`deadline`."""
        try:
            async with asyncio.timeout(self.deadline):
                return await self._try_acquire()
        except TimeoutError:
            log.warning("lease %s/%s: no answer within %.1fs", self.namespace, self.name,
                        self.deadline)
            return False

    async def _try_acquire(self) -> bool:
        now = self.clock()
        try:
            lease = await self.client.find(names.LEASES, self.name, self.namespace)
            if lease is None:
                spec = dict(self._spec(None, now), leaseTransitions=0)
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": spec}
                await self.client.create(names.LEASES, body, self.namespace)
                return True
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity")
            expires = parse_time(spec.get("renewTime")) + float(
                spec.get("leaseDurationSeconds") or self.duration)
            if holder and holder != self.identity and expires > now:
                return False
            patch = {"metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                     "spec": self._spec(lease, now)}
            await self.client.patch(names.LEASES, self.name, patch, self.namespace)
            return True
        except ApiError as exc:
            if exc.status not in (409, 0) and exc.status < 500:
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    async def release(self) -> None:
        try:
            lease = await self.client.find(names.LEASES, self.name, self.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            patch = {"metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                     "spec": {"holderIdentity": None, "renewTime": None, "acquireTime": None}}
            await self.client.patch(names.LEASES, self.name, patch, self.namespace)
        except ApiError as exc:
            log.info("lease %s/%s not released: %s", self.namespace, self.name, exc)
