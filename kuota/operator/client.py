"""A small asynchronous Kubernetes API client on aiohttp, that keeps trying.

kopf watches and serves webhooks; the operator's own writes (Workload
status, Jobs, Events, the Lease) go through this client, which shares the
credentials kopf logs in with (a :class:`kopf.ConnectionInfo`). It speaks
JSON, keeps connections alive, and turns API errors into :class:`ApiError`
with the HTTP status, so callers can tell a conflict (409: re-read and
retry) from a missing object (404) and from everything else.

**Transient failures are retried here**, so call sites need not: ``429
TooManyRequests`` (API Priority and Fairness sheds load this way, with a
``Retry-After``), ``500``/``502``/``503``/``504`` and lost connections or
timeouts, paced by a :class:`~kuota.operator.retries.RetryPolicy` (capped
exponential backoff with jitter, never shorter than the server's
``Retry-After``). Retrying is bounded by attempts and by a time budget, so
no caller waits forever: when either is spent — or the server asks for a
longer pause than the budget has left — the last failure is raised as an
:class:`ApiError` that says so, and the caller's own requeue takes over
(see :mod:`kuota.operator.writer`).

**Which requests may be repeated.** Every verb kuota sends is safe to repeat
after an answer that did not come: PATCHes carry the ``resourceVersion``
they were computed from (a repeat of one that landed answers 409, and the
caller re-reads), merge patches without one are idempotent, a repeated
DELETE answers 404 (callers treat that as done). A create is keyed by its
name: a repeat of one that landed answers ``409 AlreadyExists``, which is
returned to the caller, who already handles it (the Workload is read
instead; the Elector finds its own Lease at the next renewal). The client
does not turn that 409 into success, because only the caller knows whether
the existing object is the one it meant. A create *without* a name
(``generateName``: Events) would be created twice, so it is repeated only
after failures that prove nothing was written: a refused connection, or an
answer that asks to retry (``429``, or any status with ``Retry-After``).

**Credentials.** A ``401 Unauthorized`` usually means the token was
replaced under us: projected service-account tokens are rotated by the
kubelet (about hourly), exec plugins and cloud logins hand out tokens that
expire. On a 401 the client calls ``login`` (the same function kopf logs in
with, which re-reads the token file or kubeconfig) and repeats the request
once with the new token; it also logs in again before a request when the
credentials carry an ``expiration`` that has passed. Client certificates
are part of the TLS connection and are not re-read.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
import email.utils
import json
import logging
import random
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import kopf

from kuota.operator.names import Res
from kuota.operator.retries import RetryPolicy

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
Body = dict[str, Any]

#: Answers worth repeating the same request for.
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Failures worth trying the same work again later (after this client gave up): the server
#: was unreachable (0), overloaded or failing, or our token was stale.
TRANSIENT_STATUSES = RETRIED_STATUSES | {0, 401, 408}


DEFAULT_RETRY = RetryPolicy()


class ApiError(Exception):
    """The API server refused a request (or could not be reached: status 0)."""

    def __init__(self, status: int, reason: str, message: str, *,
                 retry_after: float | None = None, sent: bool = True) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message
        #: Seconds the server asked to wait before trying again (``Retry-After``).
        self.retry_after = retry_after
        #: False when the request provably never reached the server (connection refused).
        self.sent = sent
        #: How many times the request was sent before this error was raised.
        self.attempts = 1

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def transient(self) -> bool:
        """Whether the same work may succeed later without anything changing."""
        return self.status in TRANSIENT_STATUSES

    def gave_up(self, attempts: int, elapsed: float) -> ApiError:
        """This error, saying how long the client tried."""
        if attempts <= 1:
            return self
        final = ApiError(self.status, self.reason,
                         f"{self.message} (gave up after {attempts} attempts in "
                         f"{elapsed:.1f}s)", retry_after=self.retry_after, sent=self.sent)
        final.attempts = attempts
        return final


def retry_after(headers: Mapping[str, str], payload: Any) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date), else from a
    ``Status``'s ``details.retryAfterSeconds``."""
    value = headers.get("Retry-After")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                now = datetime.datetime.now(tz=when.tzinfo or datetime.UTC)
                return max(0.0, (when - now).total_seconds())
    details = payload.get("details") if isinstance(payload, dict) else None
    seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None


def _status_error(status: int, http_reason: str | None, text: str,
                  headers: Mapping[str, str]) -> ApiError:
    try:
        payload = json.loads(text) if text else {}
    except ValueError:
        payload = {"message": text[:200]}
    if not isinstance(payload, dict):
        payload = {}
    return ApiError(status, str(payload.get("reason") or http_reason or ""),
                    str(payload.get("message") or text[:200]),
                    retry_after=retry_after(headers, payload))


def _connection_error(what: str, exc: BaseException) -> ApiError:
    # Refused or unresolvable: the request never left. Anything later (a reset, a timeout
    # while waiting for the answer) may have reached the server.
    unsent = isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)
    return ApiError(0, "Unreachable" if unsent else "NoAnswer", f"{what}: {exc!r}",
                    sent=not unsent)


def _ssl_context(info: kopf.ConnectionInfo) -> ssl.SSLContext | bool:
    if not info.server.startswith("https:"):
        return False
    if info.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        cadata = info.ca_data
        if isinstance(cadata, str | bytes) and cadata:
            raw = cadata if isinstance(cadata, bytes) else cadata.encode()
            text = raw.decode() if b"BEGIN" in raw else base64.b64decode(raw).decode()
            context = ssl.create_default_context(cadata=text)
        else:
            context = ssl.create_default_context(
                cafile=str(info.ca_path) if info.ca_path else None)
    cert, key = info.certificate_path, info.private_key_path
    if info.certificate_data and info.private_key_data:
        cert, key = _to_file(info.certificate_data), _to_file(info.private_key_data)
    if cert and key:
        context.load_cert_chain(str(cert), str(key))
    return context


def _to_file(data: str | bytes) -> str:
    raw = data if isinstance(data, bytes) else data.encode()
    if b"BEGIN" not in raw:
        raw = base64.b64decode(raw)
    with tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False) as handle:
        handle.write(raw)
        return handle.name


def _authorization(info: kopf.ConnectionInfo) -> str | None:
    if info.token:
        return f"{info.scheme or 'Bearer'} {info.token}"
    if info.username and info.password:
        return aiohttp.BasicAuth(info.username, info.password).encode()
    return None


def _expiry(info: kopf.ConnectionInfo) -> float | None:
    if info.expiration is None:
        return None
    moment = info.expiration
    if moment.tzinfo is None:  # kopf's rule: a naive expiration is in UTC
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


class Credentials:
    """The ``Authorization`` header, replaced by logging in again when it goes stale.

    Shared by every view of one client. ``generation`` counts replacements, so
    requests that failed with the same stale token log in once between them.
    """

    def __init__(self, info: kopf.ConnectionInfo,
                 login: Callable[[], kopf.ConnectionInfo | None] | None = None) -> None:
        self.header = _authorization(info)
        self.expires = _expiry(info)
        self.generation = 0
        self._login = login
        self._lock = asyncio.Lock()

    @property
    def expired(self) -> bool:
        return self.expires is not None and time.time() >= self.expires

    async def refresh(self, seen: int) -> bool:
        """Log in again after ``seen`` went stale; True if there is a new header to try."""
        async with self._lock:
            if self.generation != seen:
                return True  # another request already logged in again
            if self._login is None:
                return False
            # login functions read files (or run a kubeconfig's exec plugin): not in the loop.
            info = await asyncio.to_thread(self._login)
            if info is None:
                return False
            header = _authorization(info)
            self.expires = _expiry(info)
            if header is None or header == self.header:
                return False
            log.info("logged in again: the API server refused the previous credentials")
            self.header = header
            self.generation += 1
            return True


class Client:
    """One keep-alive session to the API server; create it inside the running loop.

    ``login``: how to get fresh credentials (see the module docstring);
    ``on_retry(reason)``: told about each repeated request, for metrics.
    """

    def __init__(self, info: kopf.ConnectionInfo, *, timeout: float = 30.0,
                 connections: int = 64, retry: RetryPolicy = DEFAULT_RETRY,
                 login: Callable[[], kopf.ConnectionInfo | None] | None = None,
                 on_retry: Callable[[str], None] | None = None,
                 rng: random.Random | None = None) -> None:
        self.server = info.server.rstrip("/")
        self.retry = retry
        self.credentials = Credentials(info, login)
        self._on_retry = on_retry or (lambda reason: None)
        self._rng = rng or random.Random()
        self._session = aiohttp.ClientSession(
            headers={"Accept": "application/json", "User-Agent": "kuota-operator"},
            timeout=aiohttp.ClientTimeout(total=timeout),
            connector=aiohttp.TCPConnector(limit=connections, ssl=_ssl_context(info)))

    def with_retry(self, retry: RetryPolicy) -> Client:
        """The same session and credentials, retrying by another policy."""
        view = copy.copy(self)
        view.retry = retry
        return view

    async def close(self) -> None:
        await self._session.close()

    async def _headers(self, extra: Mapping[str, str]) -> tuple[dict[str, str], int]:
        credentials = self.credentials
        if credentials.expired:
            await credentials.refresh(credentials.generation)
        headers = dict(extra)
        if credentials.header:
            headers["Authorization"] = credentials.header
        return headers, credentials.generation

    async def _send(self, method: str, path: str, data: str | None,
                    headers: Mapping[str, str], params: Mapping[str, str] | None) -> Any:
        try:
            async with self._session.request(method, self.server + path, data=data,
                                             headers=headers, params=params) as answer:
                text = await answer.text()
                if answer.status >= 400:
                    raise _status_error(answer.status, answer.reason, text, answer.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _connection_error(f"{method} {path}", exc) from exc
        try:
            return json.loads(text) if text else {}
        except ValueError:
            return {}

    async def username(self) -> str:
        """Who the API server takes this client for (a SelfSubjectReview, GA since 1.28;
        every authenticated user may make one): kuota's webhook lets this identity, and
        only it, make the changes it keeps from users (:mod:`kuota.operator.guard`)."""
        review = await self.request(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        name = ((review.get("status") or {}).get("userInfo") or {}).get("username")
        if not isinstance(name, str) or not name:
            raise ApiError(0, "Unknown", f"a SelfSubjectReview named no user: {review}")
        return name

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json",
                      params: Mapping[str, str] | None = None) -> Body:
        data = None if body is None else json.dumps(body)
        extra = {"Content-Type": content_type} if data is not None else {}
        # A create without a name cannot be told apart from its repeat (module docstring).
        unnamed = method == "POST" and isinstance(body, dict) \
            and not (body.get("metadata") or {}).get("name")
        started = time.monotonic()
        attempt, logged_in = 0, False
        while True:
            attempt += 1
            headers, generation = await self._headers(extra)
            try:
                payload = await self._send(method, path, data, headers, params)
            except ApiError as exc:
                failure = exc
            else:
                return payload if isinstance(payload, dict) else {}
            if failure.status == 401 and not logged_in:
                logged_in = True  # once: a second 401 is not about a stale token
                if await self.credentials.refresh(generation):
                    self._on_retry("401")
                    continue
            elapsed = time.monotonic() - started
            pause = self._pause(failure, attempt, elapsed, unnamed)
            if pause is None:
                raise failure.gave_up(attempt, elapsed)
            reason = str(failure.status or failure.reason)
            self._on_retry(reason)
            log.debug("%s %s failed (%s); attempt %d in %.2fs", method, path, failure,
                      attempt + 1, pause)
            await asyncio.sleep(pause)

    def _pause(self, failure: ApiError, attempt: int, elapsed: float,
               unnamed: bool) -> float | None:
        """How long to wait before repeating a failed request; None: do not repeat it."""
        policy = self.retry
        if failure.status not in RETRIED_STATUSES and failure.status != 0:
            return None
        if unnamed and failure.sent and failure.status != 429 and failure.retry_after is None:
            return None  # it may have been written: a repeat would write it twice
        if attempt >= policy.attempts:
            return None
        pause = policy.backoff(attempt, self._rng, failure.retry_after)
        if elapsed + pause > policy.budget:
            return None  # the server asks for more patience than this request has left
        return pause

    # -- verbs -------------------------------------------------------------------------------
    async def get(self, res: Res, name: str, namespace: str | None = None) -> Body:
        return await self.request("GET", res.path(namespace, name))

    async def find(self, res: Res, name: str, namespace: str | None = None) -> Body | None:
        try:
            return await self.get(res, name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    async def list(self, res: Res, namespace: str | None = None, *,
                   label_selector: str | None = None) -> tuple[list[Body], str]:
        """Every object (following ``continue``) and the list's resourceVersion."""
        items: list[Body] = []
        params: dict[str, str] = {"limit": "500"}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = await self.request("GET", res.path(namespace), params=params)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion") or "")
            params["continue"] = meta["continue"]

    async def watch(self, res: Res, version: str, namespace: str | None = None, *,
                    label_selector: str | None = None) -> AsyncIterator[Body]:
        """Watch events after ``version`` (one server-side timeout's worth); 410 raises.

        Not retried here: the caller (:mod:`kuota.operator.informer`) backs off and
        watches again from the last version it saw. A 401 logs in again first, so the
        next watch carries the new token.
        """
        params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": "300"}
        if label_selector:
            params["labelSelector"] = label_selector
        headers, generation = await self._headers({})
        try:
            async with self._session.get(self.server + res.path(namespace), params=params,
                                         headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=None,
                                                                       sock_read=330)) as answer:
                if answer.status >= 400:
                    failure = _status_error(answer.status, answer.reason,
                                            await answer.text(), answer.headers)
                    if failure.status == 401:
                        await self.credentials.refresh(generation)
                    raise failure
                async for line in answer.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        raise ApiError(int(status.get("code") or 500),
                                       str(status.get("reason") or ""),
                                       str(status.get("message") or ""))
                    yield event
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _connection_error(f"watch {res.plural}", exc) from exc

    async def create(self, res: Res, body: Body, namespace: str | None = None) -> Body:
        return await self.request("POST", res.path(namespace), body)

    async def patch(self, res: Res, name: str, patch: Any, namespace: str | None = None, *,
                    subresource: str | None = None, content_type: str = MERGE_PATCH) -> Body:
        return await self.request("PATCH", res.path(namespace, name, subresource), patch,
                                  content_type=content_type)

    async def replace(self, res: Res, name: str, body: Body,
                      namespace: str | None = None) -> Body:
        return await self.request("PUT", res.path(namespace, name), body)

    async def delete(self, res: Res, name: str, namespace: str | None = None) -> Body:
        return await self.request("DELETE", res.path(namespace, name))
