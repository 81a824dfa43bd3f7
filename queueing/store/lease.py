"""The scheduler lease: one active scheduler at a time, with a fencing token.

Several ``kuota scheduler`` processes may run; the one holding the lease is
active, the others stand by and try to take it every few seconds. The lease
is a key with a TTL whose value is ``identity|token``: the token comes from a
counter incremented on every new acquisition, so each reign has its own.

A lease with a TTL alone is not enough — a leader paused for longer than the
TTL (GC, swapped out, a slow disk) wakes up believing it still leads. Every
scheduler write therefore carries the holder value and the store script
compares it with the lease key in the same atomic step (*fencing*): a
deposed leader's writes are refused, and it learns so from the answer.

Both keys recover from garbage written around kuota: taking the lease sets a
malformed lease or fence aside and names it (:mod:`queueing.store.quarantine`);
a fence that is no counter starts again from Redis's clock in seconds, above
any count of reigns, so no token is handed out twice.
"""

from __future__ import annotations

from typing import Any

from queueing.store.keys import Keys
from queueing.store.scripts import Scripts


class Lease:
    def __init__(self, scripts: Scripts, keys: Keys, identity: str, ttl: float) -> None:
        if not identity or "|" in identity:
            raise ValueError(f"scheduler identity {identity!r} must be non-empty without '|'")
        if ttl <= 0:
            raise ValueError(f"lease ttl must be positive, got {ttl}")
        self._scripts = scripts
        self._keys = keys
        self.identity = identity
        self.ttl = ttl
        #: ``identity|token`` while held, else None.
        self.holder: str | None = None

    @property
    def token(self) -> int | None:
        return int(self.holder.rpartition("|")[2]) if self.holder else None

    def acquire(self) -> bool:
        """Take the lease if free (keeping our token if we already hold it). Another
        process with the same identity does not count as us: it waits for the TTL."""
        k = self._keys
        status = self._scripts.run(
            "lease_acquire",
            [k.lease, k.fence, k.quarantine, k.quarantined(k.quarantine),
             k.quarantined(k.lease), k.quarantined(k.fence)],
            [self.identity, self._ms, self.holder or ""])
        self.holder = status[3:] if status.startswith("ok:") else None
        return self.holder is not None

    def held_by(self, holder: str) -> Lease:
        """Another handle on this lease as held by ``holder`` (for a renewing thread: the
        two never share the mutable :attr:`holder`)."""
        copy = Lease(self._scripts, self._keys, self.identity, self.ttl)
        copy.holder = holder
        return copy

    def renew(self) -> bool:
        """Extend the lease; False (and no longer holding) if it was lost."""
        if self.holder is None:
            return False
        if self._scripts.run("lease_renew", [self._keys.lease], [self.holder, self._ms]) != "ok":
            self.holder = None
        return self.holder is not None

    def release(self) -> None:
        if self.holder is not None:
            self._scripts.run("lease_release", [self._keys.lease], [self.holder])
            self.holder = None

    def current(self, redis: Any) -> str | None:
        """Who holds the lease now (for status output), as ``identity|token``."""
        value = redis.get(self._keys.lease)
        return str(value) if value else None

    @property
    def _ms(self) -> int:
        return max(1, round(self.ttl * 1000))
