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

Nothing a submitter writes grows without bound. Its user may append to its
stream as fast as it likes (an ACL cannot limit ``XADD``), so the scheduler
caps what each namespace may leave in Redis: a stream found holding more than
:data:`REQUESTS_KEPT` entries is trimmed to that many (the oldest go, unanswered:
``XADD MAXLEN``'s rule), and a namespace keeps at most :data:`ANSWERS_KEPT`
answers (the oldest are deleted first; ``P:answers:NS`` lists them by when).
A request whose id is not a short token (:data:`REQUEST_ID`) is refused without
an answer: its id would name the answer's key. A namespace that floods its own
stream only delays and loses its own requests; other namespaces' streams are
read in the same read, each with its own batch.

An entry is a flat map of text: ``op`` (``submit`` or ``cancel``), ``id``
(the request id the answer is filed under), and for a submission ``key``,
``manifest`` (the Workload as JSON) and ``submission`` (its id); for a
cancellation ``key`` and ``message``. An answer is JSON:
``{"ok": true, "key": ...}`` or ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Final

from queueing.store.keys import Keys

ANSWER_TTL: Final = 3600
#: Entries one scheduler step takes from one stream (the rest wait for the next step).
BATCH: Final = 200
#: Most entries a namespace's request stream keeps; the oldest beyond are dropped unanswered.
REQUESTS_KEPT: Final = 1000
#: Most answers a namespace keeps; the oldest beyond are deleted.
ANSWERS_KEPT: Final = 1000
#: What a request id must look like to name its answer's key (the client's are 16 hex digits).
REQUEST_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


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

    @property
    def answerable(self) -> bool:
        """Does its id make a key for an answer (:data:`REQUEST_ID`)?"""
        return REQUEST_ID.fullmatch(self.id) is not None


class RequestStream:
    def __init__(self, redis: Any, keys: Keys) -> None:
        self._r = redis
        self._keys = keys

    # -- submitters ----------------------------------------------------------------
    def post(self, namespace: str, op: str, *, request: str | None = None,
             **fields: str) -> str:
        """Append a request to ``namespace``'s stream; returns its id (``request``, when a
        retried post gives the id of its first try, else a new one)."""
        request = request or secrets.token_hex(8)
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

    def trim(self, namespaces: Collection[str]) -> dict[str, int]:
        """Cut these namespaces' streams to :data:`REQUESTS_KEPT` entries, the oldest
        dropped; how many each lost."""
        if not namespaces:
            return {}
        pipe = self._r.pipeline(transaction=False)
        for namespace in namespaces:
            pipe.xtrim(self._keys.requests(namespace), maxlen=REQUESTS_KEPT, approximate=False)
        return dict(zip(namespaces, map(int, pipe.execute()), strict=True))

    def answered(self, request: Request, answer: dict[str, Any], now: float) -> None:
        """File the answer (none for a request that is not :attr:`Request.answerable`),
        then drop the entry (in that order: a crash between the two repeats the request,
        which is harmless; the reverse would lose the answer)."""
        pipe = self._r.pipeline(transaction=True)
        if request.answerable:
            pipe.set(self._keys.answer(request.namespace, request.id), json.dumps(answer),
                     ex=ANSWER_TTL)
            pipe.zadd(self._keys.answers(request.namespace), {request.id: now})
        pipe.xdel(self._keys.requests(request.namespace), request.entry)
        pipe.execute()

    def forget_answers(self, namespaces: Collection[str], now: float) -> int:
        """Keep each namespace's newest :data:`ANSWERS_KEPT` answers, and none older than
        :data:`ANSWER_TTL` in its list (their keys expired); how many were deleted."""
        if not namespaces:
            return 0
        pipe = self._r.pipeline(transaction=False)
        for namespace in namespaces:
            index = self._keys.answers(namespace)
            pipe.zremrangebyscore(index, "-inf", now - ANSWER_TTL)
            pipe.zrange(index, 0, -ANSWERS_KEPT - 1)
        found = pipe.execute()[1::2]
        pipe = self._r.pipeline(transaction=False)
        for namespace, ids in zip(namespaces, found, strict=True):
            if ids:
                pipe.delete(*(self._keys.answer(namespace, str(i)) for i in ids))
                pipe.zrem(self._keys.answers(namespace), *ids)
        pipe.execute()
        return sum(len(ids) for ids in found)
