"""The ``visibility.kuota.dev`` aggregated API server: pending positions over HTTPS.

The API server's aggregation layer forwards every request under
``/apis/visibility.kuota.dev/`` to this server (an APIService names the
Service in front of it). It is an *extension API server* in Kubernetes'
sense, and authenticates and authorizes like one:

* **Who asks.** The API server has authenticated the user already; it
  connects with its front-proxy client certificate and names the user in
  request headers (``X-Remote-User``, ``X-Remote-Group``,
  ``X-Remote-Extra-*``). Those headers are believed only on a connection whose
  client certificate the front-proxy CA signed (and whose common name is an
  allowed one): anybody else could write them. The CA, the allowed names and
  the header names are what the API server publishes in the ConfigMap
  ``kube-system/extension-apiserver-authentication`` (read with the
  ``extension-apiserver-authentication-reader`` Role), re-read every minute
  so a rotated front-proxy CA is taken up.
* **May they.** A SubjectAccessReview asks the API server whether the user
  may ``get`` the subresource (``clusterqueues/pendingworkloads`` of group
  ``visibility.kuota.dev``, named, namespaced for LocalQueues): RBAC grants
  it like any other permission (``system:auth-delegator`` lets the operator
  ask). Answers are remembered for ten seconds per user and object.
  Discovery (``/apis/...`` without an object) is open to every
  authenticated front-proxy connection, as it is on the API server itself.
* **Who answers.** Only the leader has the queues. The leader labels its own
  Pod ``kuota.dev/leader=true`` (:mod:`kuota.operator.leader`) and the
  Service selects that label; a replica that does not lead answers 503, which
  the API server passes on while the label moves.

The documents themselves are built by :mod:`kuota.operator.pendingworkloads`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp.web

from kuota.operator import names
from kuota.operator import pendingworkloads as pw
from kuota.operator.certs import ServingCertificate, load

if TYPE_CHECKING:
    from kuota.operator.client import Client
    from kuota.operator.loop import Operator

log = logging.getLogger(__name__)

AUTH_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")


@dataclass
class FrontProxy:
    """How the API server vouches for users: its client CA, names and headers."""

    ca: str = ""
    allowed_names: tuple[str, ...] = ()
    user_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)

    @classmethod
    def from_configmap(cls, data: Mapping[str, str]) -> FrontProxy:
        def names(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
            text = data.get(key)
            if not text:
                return default
            values = json.loads(text)
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"{key}: expected a JSON list of strings, got {text!r}")
            return tuple(values) or default

        return cls(ca=data.get("requestheader-client-ca-file", ""),
                   allowed_names=names("requestheader-allowed-names", ()),
                   user_headers=names("requestheader-username-headers", cls.user_headers),
                   group_headers=names("requestheader-group-headers", cls.group_headers),
                   extra_prefixes=names("requestheader-extra-headers-prefix",
                                        cls.extra_prefixes))

    def configure(self, context: ssl.SSLContext) -> None:
        # Optional, not required: the handshake of a client without a certificate
        # succeeds and its request is refused with a readable 401 instead.
        context.verify_mode = ssl.CERT_OPTIONAL
        if self.ca:
            context.load_verify_locations(cadata=self.ca)

    def user(self, request: aiohttp.web.BaseRequest) -> User | None:
        """The user the API server names, or None when the connection is not the proxy's."""
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        if not peer or not self.ca:
            return None  # no certificate, or one the CA did not sign (verify failed)
        common_names = {value for rdn in peer.get("subject", ()) for key, value in rdn
                        if key == "commonName"}
        if self.allowed_names and not common_names & set(self.allowed_names):
            return None
        name = next((request.headers[h] for h in self.user_headers if h in request.headers), "")
        if not name:
            return None
        groups = [g for h in self.group_headers for g in request.headers.getall(h, [])]
        extra: dict[str, list[str]] = {}
        for header, value in request.headers.items():
            for prefix in self.extra_prefixes:
                if header.lower().startswith(prefix.lower()):
                    extra.setdefault(header[len(prefix):].lower(), []).append(value)
        return User(name, tuple(groups), {k: tuple(v) for k, v in extra.items()})


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


Review = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class Authorizer:
    """SubjectAccessReviews, remembered for ``ttl`` seconds per user and object."""

    def __init__(self, review: Review, *, ttl: float = 10.0, size: int = 4096) -> None:
        self.review, self.ttl, self.size = review, ttl, size
        self._seen: dict[tuple[Any, ...], tuple[float, bool, str]] = {}

    async def allowed(self, user: User, attributes: dict[str, str]) -> tuple[bool, str]:
        key = (user.name, user.groups, tuple(sorted((k, v) for k, v in user.extra.items())),
               tuple(sorted(attributes.items())))
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and seen[0] > now:
            return seen[1], seen[2]
        answer = await self.review({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user.name, "groups": list(user.groups),
                     "extra": {k: list(v) for k, v in user.extra.items()},
                     "resourceAttributes": attributes}})
        result = answer.get("status") or {}
        allowed, why = bool(result.get("allowed")), str(result.get("reason", ""))
        if len(self._seen) >= self.size:
            self._seen.clear()  # a bound, not an LRU: refilling costs one review per user
        self._seen[key] = (now + self.ttl, allowed, why)
        return allowed, why


def _json(body: dict[str, Any], code: int = 200) -> aiohttp.web.Response:
    return aiohttp.web.json_response(body, status=code)


def _fail(error: pw.RequestError) -> aiohttp.web.Response:
    return _json(pw.status(error.code, error.reason, error.message), error.code)


def build_app(operator: Operator, proxy: Callable[[], FrontProxy],
              authorizer: Authorizer) -> aiohttp.web.Application:
    """The routes; ``proxy`` gives the front-proxy settings as they are now."""

    def caller(request: aiohttp.web.Request) -> User:
        user = proxy().user(request)
        if user is None:
            raise pw.RequestError(401, "Unauthorized",
                                  "Unauthorized: requests must come through the Kubernetes "
                                  "API server (its front-proxy client certificate)")
        return user

    api = pw.KUEUE if names.SERVED == "kueue" else pw.KUOTA

    async def check(request: aiohttp.web.Request, resource: str, name: str,
                    namespace: str | None = None) -> None:
        user = caller(request)
        attributes = {"group": api.group, "version": version_of(request),
                      "resource": resource, "subresource": "pendingworkloads", "name": name,
                      "verb": "get"}
        if namespace is not None:
            attributes["namespace"] = namespace
        allowed, why = await authorizer.allowed(user, attributes)
        if not allowed:
            where = f' in the namespace "{namespace}"' if namespace is not None else ""
            raise pw.RequestError(
                403, "Forbidden",
                f'{resource}.{api.group} "{name}" is forbidden: User "{user.name}" cannot '
                f'get resource "{resource}/pendingworkloads" in API group "{api.group}"{where}'
                + (f": {why}" if why else ""))

    def engine() -> Any:
        found = operator.controller.engine
        if found is None or not operator.ready.is_set():
            raise pw.RequestError(503, "ServiceUnavailable",
                                  "this kuota replica does not lead (or is still rebuilding): "
                                  "only the leader knows the queues; retry")
        return found

    def workload(key: str) -> dict[str, Any] | None:
        return operator.controller.objects.get("Workload", key)

    def version_of(request: aiohttp.web.Request) -> str:
        return request.match_info["version"]

    def discovery(document: Callable[[aiohttp.web.Request], dict[str, Any]]
                  ) -> Callable[..., Awaitable[Any]]:
        async def serve(request: aiohttp.web.Request) -> aiohttp.web.Response:
            try:
                caller(request)
            except pw.RequestError as exc:
                return _fail(exc)
            return _json(document(request))
        return serve

    async def cluster_queue(request: aiohttp.web.Request) -> aiohttp.web.Response:
        name = request.match_info["name"]
        try:
            at = pw.page(request.query)
            await check(request, "clusterqueues", name)
            return _json(pw.cluster_queue(engine(), name, at, workload,
                                          api.group_version(version_of(request))))
        except pw.RequestError as exc:
            return _fail(exc)

    async def local_queue(request: aiohttp.web.Request) -> aiohttp.web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        try:
            at = pw.page(request.query)
            await check(request, "localqueues", name, namespace)
            return _json(pw.local_queue(engine(), namespace, name, at, workload,
                                        api.group_version(version_of(request))))
        except pw.RequestError as exc:
            return _fail(exc)

    async def healthz(_: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(text="ok")

    async def not_found(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return _fail(pw.RequestError(404, "NotFound", f"{request.path}: not served here "
                                                      f"(this server serves {api.group})"))

    # {version} is one of the group's versions (the route's pattern allows no other).
    prefix = f"/apis/{api.group}/{{version:{'|'.join(api.versions)}}}"
    app = aiohttp.web.Application()
    app.add_routes([
        aiohttp.web.get("/apis", discovery(lambda _: pw.api_group_list(api))),
        aiohttp.web.get(f"/apis/{api.group}", discovery(lambda _: pw.api_group(api))),
        aiohttp.web.get(prefix, discovery(lambda r: pw.api_resource_list(api, version_of(r)))),
        aiohttp.web.get(prefix + "/clusterqueues/{name}/pendingworkloads", cluster_queue),
        aiohttp.web.get(prefix + "/namespaces/{namespace}/localqueues/{name}/pendingworkloads",
                        local_queue),
        aiohttp.web.get("/healthz", healthz),
        # Anything else (another group's or version's path) answers as the API server would.
        aiohttp.web.get("/{path:.*}", not_found),
    ])
    return app


class Server:
    """The listening server; it follows its certificate files and the front-proxy settings."""

    def __init__(self, operator: Operator, proxy: FrontProxy, authorizer: Authorizer, *,
                 certfile: str, keyfile: str) -> None:
        self.proxy = proxy
        self.certificate = ServingCertificate(certfile, keyfile,
                                              configure=lambda ctx: self.proxy.configure(ctx))
        self.runner = aiohttp.web.AppRunner(build_app(operator, lambda: self.proxy, authorizer),
                                            handle_signals=False)
        self._follower: asyncio.Task[None] | None = None

    async def listen(self, addr: str, port: int) -> None:
        await self.runner.setup()
        await aiohttp.web.TCPSite(self.runner, addr, port,
                                  ssl_context=self.certificate.context).start()

    def take_up(self, proxy: FrontProxy) -> bool:
        """Serve with new front-proxy settings (a rotated CA); False if they cannot be used."""
        try:
            pair = load(self.certificate.certfile, self.certificate.keyfile, None,
                        proxy.configure)
        except (OSError, ssl.SSLError) as exc:
            log.warning("visibility: new front-proxy settings not taken up (%s)", exc)
            return False
        if pair is None:  # the files changed while read: next time
            return False
        self.proxy = proxy
        self.certificate.serve(pair)
        return True

    def follow(self, read_proxy: Callable[[], Awaitable[FrontProxy]], interval: float) -> None:
        async def run() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    fresh = await read_proxy()
                except Exception as exc:  # the API server away a while: keep the old settings
                    log.warning("visibility: cannot re-read %s/%s (%s); keeping the previous "
                                "front-proxy settings", *AUTH_CONFIGMAP, exc)
                    fresh = self.proxy
                if fresh != self.proxy:
                    if self.take_up(fresh):
                        log.info("visibility: front-proxy settings changed; taken up")
                    continue
                pair = self.certificate.renewed()
                if pair is not None:
                    self.certificate.serve(pair)

        self._follower = asyncio.create_task(run())

    async def stop(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follower
        await self.runner.cleanup()


async def read_front_proxy(client: Client) -> FrontProxy:
    namespace, name = AUTH_CONFIGMAP
    body = await client.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    return FrontProxy.from_configmap(body.get("data") or {})


async def serve(operator: Operator, addr: str, port: int, *, certfile: str, keyfile: str,
                interval: float = 60.0) -> Server:
    """Listen on ADDR:PORT with the serving certificate in CERTFILE/KEYFILE."""
    client = operator.client
    assert client is not None
    proxy = await read_front_proxy(client)
    if not proxy.ca:
        log.warning("%s/%s has no requestheader-client-ca-file: the API server has no "
                    "front proxy configured, so no request can be authenticated",
                    *AUTH_CONFIGMAP)

    async def review(body: dict[str, Any]) -> dict[str, Any]:
        return await client.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                    body)

    server = Server(operator, proxy, Authorizer(review), certfile=certfile, keyfile=keyfile)
    await server.listen(addr, port)
    server.follow(lambda: read_front_proxy(client), interval)
    return server
