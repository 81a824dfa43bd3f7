"""The latest body of every watched object, by kind and key, ordered by resourceVersion.

Objects reach the operator two ways: kopf's watch events, and the full lists
it reads when it starts leading (Kubernetes' list-then-watch). Both may
deliver the same object, and an older copy may arrive after a newer one.
:meth:`Objects.put` keeps whichever is newest by ``resourceVersion`` and
says whether anything changed; deletions leave a tombstone with their
version, so a list read before a deletion cannot bring the object back.

resourceVersions are opaque strings in Kubernetes; every server in practice
(etcd's revision, the emulator's counter) uses integers, so they are
compared as integers when both parse, and treated as newer otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Body = dict[str, Any]


def key_of(body: Body) -> str:
    meta = body.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def being_deleted(body: Body) -> bool:
    """Whether the object is marked for deletion (it stays visible while finalizers, a
    foreground deletion or a pod's grace period hold it)."""
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def version_of(body: Body) -> str:
    return str((body.get("metadata") or {}).get("resourceVersion") or "")


def newer(candidate: str, current: str) -> bool:
    """Whether resourceVersion ``candidate`` is newer than ``current``."""
    if not current:
        return True
    try:
        return int(candidate) > int(current)
    except ValueError:
        return candidate != current


@dataclass
class Objects:
    bodies: dict[str, dict[str, Body]] = field(default_factory=dict)
    #: kind -> key -> resourceVersion at which the object was seen deleted.
    tombstones: dict[str, dict[str, str]] = field(default_factory=dict)

    def put(self, kind: str, body: Body) -> bool:
        """Keep ``body`` if it is newer than what is known; True if it was kept."""
        key, version = key_of(body), version_of(body)
        dead = self.tombstones.get(kind, {}).get(key)
        if dead is not None and not newer(version, dead):
            return False
        current = self.bodies.setdefault(kind, {}).get(key)
        if current is not None and not newer(version, version_of(current)):
            return False
        self.bodies[kind][key] = body
        self.tombstones.get(kind, {}).pop(key, None)
        return True

    def drop(self, kind: str, key: str, version: str) -> Body | None:
        """The object was deleted at ``version``; returns what was known of it."""
        current = self.bodies.get(kind, {}).get(key)
        if current is not None and version and not newer(version, version_of(current)) \
                and version != version_of(current):
            return None  # an older deletion than what we hold: a recreated object
        self.tombstones.setdefault(kind, {})[key] = version or version_of(current or {})
        return self.bodies.get(kind, {}).pop(key, None)

    def forget_missing(self, kind: str, listed: set[str], list_version: str,
                       within: Callable[[Body], bool] | None = None) -> list[Body]:
        """After a full list: objects not in it and not newer than it were deleted.

        ``within``: the list covered only objects it accepts (a label selector).
        """
        gone = []
        for key, body in list(self.bodies.get(kind, {}).items()):
            if within is not None and not within(body):
                continue
            if key not in listed and not newer(version_of(body), list_version):
                gone.append(body)
                self.drop(kind, key, list_version)
        return gone

    def get(self, kind: str, key: str) -> Body | None:
        return self.bodies.get(kind, {}).get(key)

    def all(self, kind: str) -> Iterator[Body]:
        yield from list(self.bodies.get(kind, {}).values())

    def count(self, kind: str) -> int:
        return len(self.bodies.get(kind, {}))
