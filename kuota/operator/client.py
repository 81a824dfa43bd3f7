"""A small asynchronous Kubernetes API client on aiohttp.

kopf watches and serves webhooks; the operator's own writes (Workload
status, Jobs, Events, the Lease) go through this client, which shares the
credentials kopf logs in with (a :class:`kopf.ConnectionInfo`). It speaks
JSON, keeps connections alive, and turns API errors into :class:`ApiError`
with the HTTP status, so callers can tell a conflict (409: re-read and
retry) from a missing object (404) and from everything else.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import kopf

from kuota.operator.names import Res

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
Body = dict[str, Any]


class ApiError(Exception):
    """The API server refused a request (or could not be reached: status 0)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404


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


class Client:
    """One keep-alive session to the API server; create it inside the running loop."""

    def __init__(self, info: kopf.ConnectionInfo, *, timeout: float = 30.0,
                 connections: int = 64) -> None:
        self.server = info.server.rstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "kuota-operator"}
        if info.token:
            headers["Authorization"] = f"{info.scheme or 'Bearer'} {info.token}"
        auth = None
        if info.username and info.password:
            auth = aiohttp.BasicAuth(info.username, info.password)
        self._session = aiohttp.ClientSession(
            headers=headers, auth=auth, timeout=aiohttp.ClientTimeout(total=timeout),
            connector=aiohttp.TCPConnector(limit=connections, ssl=_ssl_context(info)))

    async def close(self) -> None:
        await self._session.close()

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json",
                      params: Mapping[str, str] | None = None) -> Body:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else {}
        try:
            async with self._session.request(method, self.server + path, data=data,
                                             headers=headers, params=params) as answer:
                text = await answer.text()
                status = answer.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, "Unreachable", f"{method} {path}: {exc!r}") from exc
        try:
            payload = json.loads(text) if text else {}
        except ValueError:
            payload = {"message": text[:200]}
        if status >= 400:
            raise ApiError(status, str(payload.get("reason") or answer.reason or ""),
                           str(payload.get("message") or text[:200]))
        return payload if isinstance(payload, dict) else {}

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
        """Watch events after ``version`` (one server-side timeout's worth); 410 raises."""
        params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": "300"}
        if label_selector:
            params["labelSelector"] = label_selector
        try:
            async with self._session.get(self.server + res.path(namespace), params=params,
                                         timeout=aiohttp.ClientTimeout(total=None,
                                                                       sock_read=330)) as answer:
                if answer.status >= 400:
                    text = await answer.text()
                    raise ApiError(answer.status, answer.reason or "", text[:200])
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
            raise ApiError(0, "Unreachable", f"watch {res.plural}: {exc!r}") from exc

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
