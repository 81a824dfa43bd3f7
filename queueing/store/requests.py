"""Requests of namespace-scoped submitters: write only to your namespace's stream.

A pool shared by several teams gives each team's people a Redis ACL user
that may *read* only their namespace's records (``P:workload:NS/*``, its
pods and logs, ``P:workloads:NS``) and *write* nothing but entries on the
stream ``P:requests:NS`` (``kuota acl submitter`` prints such a user). Their
submissions and cancellations go there instead of into the records; the
scheduler, which may write everything, takes each entry, checks it again
(the namespace comes from the stream's key, never from the entry: an entry
naming another namespace is refused), applies it, and answers under
``P:answer:NS:<request id>`` for an hour. Entries are deleted once
answered; a scheduler that dies in between takes the entry again, which is
harmless: a submission is stored once per submission id, and cancelling a
finished workload changes nothing.

An entry is a flat map of text: ``op`` (``submit`` or ``cancel``), ``id``
(the request id the answer is filed under), and for a submission ``key``,
``manifest`` (the Workload as JSON) and ``submission`` (its id); for a
cancellation ``key`` and ``message``. An answer is JSON:
``{"ok": true, "key": ...}`` or ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from queueing.store.keys import Keys

ANSWER_TTL: Final = 3600
#: Entries one scheduler step takes from one stream (the rest wait for the next step).
BATCH: Final = 200


@dataclass(frozen=True)
class Request:
    namespace: str
    #: The stream entry's id (to delete it once answered).
    entry: str
    fields: dict[str, str]

    @property
    def id(self) -> str:
        return self.fields.get("id", "")

    @property
    def op(self) -> str:
        return self.fields.get("op", "")


class RequestStream:
    def __init__(self, redis: Any, keys: Keys) -> None:
        self._r = redis
        self._keys = keys

    # -- submitters ----------------------------------------------------------------
    def post(self, namespace: str, op: str, **fields: str) -> str:
        """Append a request to ``namespace``'s stream; returns its id."""
        request = secrets.token_hex(8)
        self._r.xadd(self._keys.requests(namespace), {"op": op, "id": request, **fields})
        return request

    def answer(self, namespace: str, request: str) -> dict[str, Any] | None:
        """The scheduler's answer, once there is one."""
        text = self._r.get(self._keys.answer(namespace, request))
        return json.loads(text) if text else None

    # -- the scheduler -------------------------------------------------------------
    def take(self, namespaces: Iterable[str]) -> list[Request]:
        """The waiting requests of these namespaces' streams: one read for all of them."""
        keys = {self._keys.requests(ns): ns for ns in namespaces}
        if not keys:
            return []
        found = self._r.xread(dict.fromkeys(keys, "0"), count=BATCH)
        return [Request(keys[str(stream)], str(entry),
                        {str(k): str(v) for k, v in fields.items()})
                for stream, entries in found for entry, fields in entries]

    def answered(self, request: Request, answer: dict[str, Any]) -> None:
        """File the answer, then drop the entry (in that order: a crash between the two
        repeats the request, which is harmless; the reverse would lose the answer)."""
        pipe = self._r.pipeline(transaction=True)
        if request.id:
            pipe.set(self._keys.answer(request.namespace, request.id), json.dumps(answer),
                     ex=ANSWER_TTL)
        pipe.xdel(self._keys.requests(request.namespace), request.entry)
        pipe.execute()
