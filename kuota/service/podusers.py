"""Pod users: each pod of a node runs as a Unix user of its own.

Jobs on one node are otherwise all the worker's user, and a process may read
the environment (``/proc/PID/environ``), files and output of every other
process of its user — one team's job would see another's secrets. A worker
started as root with ``--pod-uids START-END`` runs each pod as a user id of
that range (its group the same id, no supplementary groups), so the kernel
keeps pods apart as it keeps users apart; the pods' output files are the
worker's, readable by it alone.

Ids are handed out round-robin and never to two running pods at once; a
just-freed id is the last to be used again, so a process a finished pod
left behind is unlikely to share its id with the next pod. The ids need no
entry in ``/etc/passwd``; pick a range no real user or other service uses
(subordinate-id ranges are conventional: ``/etc/subuid``).
"""

from __future__ import annotations

import collections


class PodUsers:
    def __init__(self, first: int, last: int) -> None:
        if not 0 < first <= last:
            raise ValueError(f"--pod-uids {first}-{last}: expected 0 < START <= END")
        self._free: collections.deque[int] = collections.deque(range(first, last + 1))

    @classmethod
    def parse(cls, text: str) -> PodUsers:
        """``START-END`` (or one id)."""
        first, sep, last = text.partition("-")
        try:
            start, end = int(first), int(last if sep else first)
        except ValueError:
            raise ValueError(f"--pod-uids {text!r}: expected START-END, two whole numbers") \
                from None
        return cls(start, end)

    def take(self) -> int | None:
        """An id no running pod has, or None when every id is in use."""
        return self._free.popleft() if self._free else None

    def give(self, uid: int) -> None:
        self._free.append(uid)
