"""The scheduler takes the requests of namespace-scoped submitters.

Submitters whose Redis user may write nothing but their namespace's request
stream (:mod:`queueing.store.requests`) ask the scheduler to submit or cancel
for them. The leader takes those requests a few times a second and checks
each one as if it came from the open internet: the namespace is the stream's
(a request about another namespace's workload is refused), the Workload is
validated again with the same checks the CLI makes, and only then is it
stored — through the same store calls as a direct submission, so a request
taken twice (a scheduler that died before deleting it) stores nothing twice.
Every request gets an answer, including a refusal saying why — except what a
namespace's flood pushes past its caps (:mod:`queueing.store.requests`): a
stream that holds a full batch is trimmed to ``REQUESTS_KEPT`` entries, the
oldest dropped unanswered, and each namespace keeps its newest
``ANSWERS_KEPT`` answers; a request whose id could not name an answer key is
refused without one. Both are logged with the namespace.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kuota.service import runnable, submission
from queueing.store import Store, StoreError
from queueing.store.requests import BATCH, REQUESTS_KEPT, Request

log = logging.getLogger(__name__)


class Intake:
    """Takes requests from the streams of ``namespaces`` — those with LocalQueues, the
    only ones a request can be about (a submission needs a LocalQueue, and nothing is
    ever stored elsewhere to cancel) — every ``every`` seconds, in one read."""

    def __init__(self, store: Store, clock: Callable[[], float], namespaces: Iterable[str],
                 *, every: float = 0.1) -> None:
        self.store = store
        self.clock = clock
        self.namespaces = sorted(set(namespaces))
        self.every = every
        self._next_at = 0.0
        self._rules: submission.StoredRules | None = None

    def step(self, now: float) -> int:
        """Answer what the request streams hold; returns how many were answered."""
        if now < self._next_at:
            return 0
        self._next_at = now + self.every
        requests = self.store.requests.take(self.namespaces)
        self._cap_streams(requests)
        self._rules = None  # read again for this batch, if it holds a submission
        for request in requests:
            self.store.requests.answered(request, self.answer(request), now)
        self.store.requests.forget_answers(sorted({r.namespace for r in requests}), now)
        return len(requests)

    def _cap_streams(self, requests: Sequence[Request]) -> None:
        """Trim the streams that gave a full batch (only those may hold more than the cap)."""
        taken = collections.Counter(r.namespace for r in requests)
        full = sorted(ns for ns, n in taken.items() if n >= BATCH)
        for namespace, dropped in self.store.requests.trim(full).items():
            if dropped:
                log.warning("namespace %s: its request stream held more than %d requests; "
                            "dropped the %d oldest unanswered", namespace, REQUESTS_KEPT,
                            dropped)

    def answer(self, request: Request) -> dict[str, Any]:
        if not request.answerable:
            log.warning("request of namespace %s refused unread: its id %r is not 1-64 "
                        "letters, digits, '-' or '_' (it would name the answer's key)",
                        request.namespace, request.id[:80])
            return {"ok": False, "error": "bad request id"}
        try:
            key = self._key(request)
            if request.op == "submit":
                self._submit(request, key)
            elif request.op == "cancel":
                self.store.workloads.cancel(key, now=self.clock(),
                                            message=request.fields.get("message")
                                            or "cancelled by user")
            else:
                raise ValueError(f"unknown request {request.op!r} (submit or cancel)")
        except (ValueError, StoreError) as exc:  # ObjectError is a ValueError
            problems = getattr(exc, "problems", None)
            text = "; ".join(str(p) for p in problems) if problems else str(exc)
            log.info("request %s of namespace %s refused: %s", request.id,
                     request.namespace, text)
            return {"ok": False, "error": text}
        return {"ok": True, "key": key}

    @staticmethod
    def _key(request: Request) -> str:
        key = request.fields.get("key", "")
        namespace, sep, name = key.partition("/")
        if not sep or not name:
            raise ValueError(f"request key {key!r} is not NAMESPACE/NAME")
        if namespace != request.namespace:
            raise ValueError(f"workload {key} is not in namespace {request.namespace}, "
                             "whose request stream this came through")
        return key

    def _submit(self, request: Request, key: str) -> None:
        raw = request.fields.get("manifest", "")
        if len(raw) > 2 * runnable.MAX_MANIFEST_BYTES:  # not decoded: JSON multiplies memory
            raise ValueError(f"manifest: {len(raw):,} characters; a Workload manifest may hold "
                             f"at most {runnable.MAX_MANIFEST_BYTES:,} bytes of JSON")
        try:
            manifest = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"manifest: not JSON ({exc})") from None
        if not isinstance(manifest, dict):
            raise ValueError("manifest: expected a Workload object")
        if self._rules is None:
            self._rules = submission.StoredRules.read(self.store)
        checked = self._rules.check(manifest, queue=request.fields.get("queue") or None)
        if checked.key != key:
            raise ValueError(f"the manifest is workload {checked.key}, the request {key}")
        self.store.workloads.submit(
            checked.key, spec=checked.manifest, queue=checked.queue, priority=checked.priority,
            backoff_limit=checked.backoff_limit,
            submission=request.fields.get("submission") or request.id, now=self.clock())
