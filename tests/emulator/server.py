"""The HTTP face of the emulator: a kmock handler that routes Kubernetes API requests.

kmock gives the skeleton: requests are parsed and recorded (assert on them
with kmock's DSL, e.g. ``len(handler["patch", kmock.resource("batch/v1/jobs")])``),
reactions added with the DSL (``handler["get /version"] << {...}``) take
precedence over the emulation, and Kubernetes errors render as ``Status``
objects. Everything else is this module: the URL grammar (kmock 0.8 misreads
``/api/v1/namespaces`` as a namespace), discovery, the verbs, tables and
watches over the :class:`~.store.Store`, injected faults and the pause gate.

URL grammar::

    /api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]

with ``/api/v1/namespaces/{name}[/status]`` being the namespace itself.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import json
import logging
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering  # the Request record kmock's DSL filters on

from . import deletion, discovery, errors, tables, watch, webhooks
from .faults import RESET, Fault, Faults
from .resources import ResourceType
from .rules import utc_now
from .selectors import Matcher, SelectorError, field_value, parse_fields, parse_labels
from .store import Event, Obj, Store

logger = logging.getLogger(__name__)

_VERB_ACTIONS = {
    "get": kmock.action.FETCH, "list": kmock.action.LIST, "watch": kmock.action.WATCH,
    "create": kmock.action.CREATE, "update": kmock.action.UPDATE, "patch": kmock.action.UPDATE,
    "delete": kmock.action.DELETE,
}


@dataclasses.dataclass(frozen=True)
class Route:
    """What a URL addresses; ``plural`` is None for discovery and other paths."""

    path: str
    group: str | None = None
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_route(path: str) -> Route:
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return Route(path)
    namespace = None
    if rest[:1] == ["namespaces"] and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return Route(path, group, version)
    return Route(path, group, version, plural=rest[0],
                 name=rest[1] if len(rest) > 1 else None,
                 subresource="/".join(rest[2:]) or None, namespace=namespace)


def verb_of(method: str, route: Route, params: dict[str, str]) -> str:
    if method == "GET":
        return "watch" if params.get("watch") in ("true", "1") else \
            "get" if route.name else "list"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _json(data: Any, status: int = 200) -> aiohttp.web.Response:
    return aiohttp.web.json_response(data, status=status)


class _Reset(Exception):
    """An injected fault that answers nothing: the connection is to be closed."""


def _failure(fault: Fault, route: Route) -> Exception:
    assert route.plural is not None
    return _Reset() if fault.status == RESET else fault.error(route.plural, route.name)


@attrs.define(kw_only=True)
class KubeEmulator(kmock.KubernetesScaffold):
    """A kmock handler that emulates a Kubernetes API server over a :class:`Store`."""

    store: Store = attrs.field(factory=Store)
    faults: Faults = attrs.field(factory=Faults)
    clock: Callable[[], datetime.datetime] = utc_now
    #: How many requests to keep for assertions (oldest dropped first); None keeps all.
    keep_requests: int | None = 10_000
    bookmark_interval: float = 20.0
    #: Exceptions that were not Kubernetes errors: bugs a test may assert are absent.
    unexpected_errors: list[BaseException] = attrs.field(factory=list, init=False)
    #: The HTTP status answered to each recorded request, by the request's id.
    statuses: dict[int, int] = attrs.field(factory=dict, init=False)
    _running: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    _streams: set[asyncio.Queue[Event | None]] = attrs.field(factory=set, init=False)
    _count: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        # Deliberately no kmock fallback reactions: the emulation is the fallback (_handle).
        self._running.set()

    @property
    def requests_served(self) -> int:
        """How many requests reached the emulator so far (kept or not, for benchmarks)."""
        return self._count

    # --- lifecycle hooks used by the runner (called in the server's event loop) -----------

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def end_streams(self) -> None:
        for queue in list(self._streams):
            queue.put_nowait(None)

    async def _wait_running(self) -> None:
        await self._running.wait()

    # --- entry point ----------------------------------------------------------------------

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        request: rendering.Request | None = None
        try:
            body = await raw_request.read()
            await self._running.wait()
            request = self._record(raw_request, body)
            response = await self._handle(request)
        except _Reset:
            # Close the connection under the request: the client sees a reset, no status.
            if raw_request.transport is not None:
                raw_request.transport.abort()
            response = aiohttp.web.Response(status=499)  # recorded; never reaches the client
        except kmock.KubernetesError as exc:
            response = await self._render_error(exc)
        except Exception as exc:
            self.unexpected_errors.append(exc)
            logger.error("emulator failed on %s %s:\n%s", raw_request.method,
                         raw_request.path_qs, traceback.format_exc())
            response = await self._render_error(exc)
        if request is not None:
            self.statuses[request.id] = response.status
        return response

    def _record(self, raw_request: aiohttp.web.BaseRequest, body: bytes) -> rendering.Request:
        route = parse_route(raw_request.path)
        params = dict(raw_request.query)
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        request = rendering.Request(
            id=self._count, raw_request=raw_request, url=raw_request.url,
            method=raw_request.method, params=params, headers=dict(raw_request.headers),
            cookies=dict(raw_request.cookies), body=body,
            text=body.decode("utf-8", "replace"), data=data,
            action=_VERB_ACTIONS.get(verb_of(raw_request.method, route, params)),
            resource=None if route.plural is None else kmock.resource(
                route.group, route.version, route.plural),
            namespace=route.namespace, name=route.name, subresource=route.subresource,
        )
        self._count += 1
        self._requests.append(request)
        if self.keep_requests is not None and len(self._requests) > self.keep_requests:
            dropped = self._requests[: len(self._requests) - self.keep_requests]
            del self._requests[: len(dropped)]
            for old in dropped:
                self.statuses.pop(old.id, None)
        return request

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        route = parse_route(request.url.path)
        verb = verb_of(str(request.method.value), route, dict(request.params))
        if route.plural is not None and route.group is not None:
            fault = self.faults.take(verb, route.group, route.plural, route.namespace,
                                     route.name, route.subresource)
            if fault is not None:
                raise _failure(fault, route)
        if self._payloads:  # reactions added with kmock's DSL win over the emulation
            try:
                return await super()._handle(request)
            except NotImplementedError:
                pass
        if route.plural is None:
            return self._discovery(request, route)
        response = await self._resource(request, route, verb)
        if route.group is not None and verb != "watch" and response.status < 400:
            # The request was carried out; an ``after`` fault loses its answer.
            fault = self.faults.take(verb, route.group, route.plural, route.namespace,
                                     route.name, route.subresource, after=True)
            if fault is not None:
                raise _failure(fault, route)
        return response

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        response = await super()._render_error(exc)
        details = exc.details if isinstance(exc, kmock.KubernetesError) else None
        if isinstance(details, dict) and details.get("retryAfterSeconds") is not None:
            # As the API server does (its 429s from API Priority and Fairness, for one).
            response.headers["Retry-After"] = str(details["retryAfterSeconds"])
        return response

    # --- discovery and other non-resource paths -------------------------------------------

    def _discovery(self, request: rendering.Request, route: Route) -> aiohttp.web.StreamResponse:
        types = self.store.registry.all()
        path = route.path.rstrip("/") or "/"
        document: dict[str, Any] | None
        if request.method != kmock.method.GET:
            raise errors.method_not_allowed(f"{request.method.value} is not allowed on {path}")
        if path in ("/healthz", "/readyz", "/livez"):
            return aiohttp.web.Response(text="ok")
        if path == "/":
            document = discovery.root_paths(types)
        elif path == "/version":
            document = discovery.SERVER_VERSION
        elif path == "/api":
            document = discovery.api_versions(f"{request.url.host}:{request.url.port}")
        elif path == "/apis":
            document = discovery.api_group_list(types)
        elif route.group is None and path.startswith("/apis/") and path.count("/") == 2:
            document = discovery.api_group(types, path.split("/")[2])
        elif route.group is not None and route.version is not None:
            document = discovery.api_resource_list(types, route.group, route.version)
        else:
            document = None
        if document is None:
            raise errors.page_not_found(path)
        return _json(document)

    # --- resources ------------------------------------------------------------------------

    def _type(self, route: Route) -> ResourceType:
        assert route.group is not None and route.version is not None and route.plural
        rtype = self.store.registry.get(route.group, route.version, route.plural)
        if rtype is None or (route.namespace is not None and not rtype.namespaced):
            raise errors.page_not_found(route.path)
        if route.subresource is not None and route.subresource not in rtype.subresources:
            raise errors.page_not_found(route.path)
        return rtype

    async def _resource(self, request: rendering.Request, route: Route,
                        verb: str) -> aiohttp.web.StreamResponse:
        rtype = self._type(route)
        params = dict(request.params)
        headers = request._raw_request.headers if request._raw_request is not None else {}
        if params.get("dryRun"):
            raise errors.bad_request("the emulator does not support dryRun")
        as_table = tables.wants_table(headers.get("Accept", ""))
        namespace = route.namespace if rtype.namespaced else None

        if verb == "watch":
            assert request._raw_request is not None
            matches = self._matcher(params, route.name)
            return await watch.serve(
                request._raw_request, store=self.store, rtype=rtype, namespace=namespace,
                matches=matches, params=params, running=self._wait_running,
                streams=self._streams, bookmark_interval=self.bookmark_interval,
                render=lambda obj: self._render(rtype, obj, as_table, params),
            )
        if verb == "list":
            return _json(self._list(rtype, namespace, self._matcher(params, None), params,
                                    as_table))
        if verb == "create" and route.name is None:
            body = self._body(request, rtype)
            target_ns = (namespace or (body.get("metadata") or {}).get("namespace")) \
                if rtype.namespaced else None
            meta = body.get("metadata") or {}
            if target_ns and not meta.get("namespace"):
                # (the API server sets it before admission: webhooks read it there)
                body = {**body, "metadata": {**meta, "namespace": target_ns}}
            body = await webhooks.admit(self.store, rtype, target_ns, body, operation="CREATE")
            obj = self.store.create(rtype, namespace, body, keep_status=False)
            return _json(self._render(rtype, obj, as_table, params), status=201)
        if verb == "deletecollection":
            items, _ = self.store.list_objects(rtype, namespace, [self._matcher(params, None)])
            gone = [self.store.delete(rtype, namespace, item["metadata"]["name"])
                    for item in items]
            return _json({"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                          "metadata": {"resourceVersion": str(self.store.resource_version)},
                          "items": gone})

        if route.name is None or (verb == "create" and route.name):
            raise errors.method_not_allowed(f"{request.method.value} is not allowed on "
                                            f"{route.path}")
        if verb == "get":
            obj = self.store.get(rtype, namespace, route.name)
        elif verb == "update":
            obj = self.store.replace(rtype, namespace, route.name, self._body(request, rtype),
                                     subresource=route.subresource)
        elif verb == "patch":
            content_type = headers.get("Content-Type", "").split(";")[0].strip()
            if request.data is None:
                raise errors.bad_request("the PATCH body must be JSON")
            obj = self.store.patch(rtype, namespace, route.name, content_type, request.data,
                                   subresource=route.subresource)
        elif verb == "delete":
            options = request.data if isinstance(request.data, dict) else {}
            propagation = deletion.propagation(
                rtype.key, params.get("propagationPolicy") or options.get("propagationPolicy"),
                params.get("orphanDependents", options.get("orphanDependents")))
            grace = deletion.parse_grace(params.get("gracePeriodSeconds",
                                                    options.get("gracePeriodSeconds")))
            obj = self.store.delete(rtype, namespace, route.name,
                                    preconditions=options.get("preconditions"),
                                    propagation=propagation, grace_period=grace)
        else:
            raise errors.method_not_allowed(f"{request.method.value} is not allowed on "
                                            f"{route.path}")
        return _json(self._render(rtype, obj, as_table, params))

    @staticmethod
    def _body(request: rendering.Request, rtype: ResourceType) -> Obj:
        body = request.data
        if not isinstance(body, dict):
            raise errors.bad_request(f"the body of a {rtype.kind} write must be a JSON object "
                                     "(protobuf and YAML are not supported by the emulator)")
        if body.get("kind") not in (None, rtype.kind):
            raise errors.bad_request(f"the kind in the body ({body.get('kind')}) does not match "
                                     f"the resource {rtype} ({rtype.kind})")
        return body

    @staticmethod
    def _matcher(params: dict[str, str], name: str | None) -> Matcher:
        try:
            labels = parse_labels(params.get("labelSelector"))
            fields = parse_fields(params.get("fieldSelector"))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc

        def matches(obj: Mapping[str, Any]) -> bool:
            return (name is None or field_value(obj, "metadata.name") == name) \
                and labels(obj) and fields(obj)

        return matches

    def _render(self, rtype: ResourceType, obj: Obj, as_table: bool,
                params: dict[str, str]) -> Obj:
        """The object as the requested version sees it, or a one-row Table."""
        obj = dict(obj, apiVersion=rtype.api_version, kind=rtype.kind)
        if as_table:
            return tables.table(rtype, [obj], now=self.clock(),
                                include_object=params.get("includeObject", "Metadata"),
                                metadata={"resourceVersion": obj["metadata"]["resourceVersion"]})
        return obj

    def _list(self, rtype: ResourceType, namespace: str | None, matches: Matcher,
              params: dict[str, str], as_table: bool) -> Obj:
        after: tuple[str, str] | None = None
        first: int | None = None
        if params.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(params["continue"]))
                after, first = (str(token["after"][0]), str(token["after"][1])), int(token["rv"])
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise errors.bad_request(f"invalid continue token: {exc}") from exc
            if self.store.compacted(first):
                # etcd compacted the revision the list started at (the real server's words)
                raise errors.gone("The provided continue parameter is too old to display a "
                                  "consistent list result. You can start a new list without "
                                  "the continue parameter.")
        limit = int(params.get("limit") or 0)
        page, rv, more = self.store.list_page(rtype, namespace, [matches], after=after,
                                              limit=max(limit, 0))
        # Every page carries the first page's version: a watch from it sees every change
        # made while the pages were read.
        rv = rv if first is None else first
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if more:
            metadata["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"after": list(_position(page[-1])), "rv": rv}).encode()).decode()
            metadata["remainingItemCount"] = more
        page = [dict(item, apiVersion=rtype.api_version, kind=rtype.kind) for item in page]
        if as_table:
            return tables.table(rtype, page, now=self.clock(), metadata=metadata,
                                include_object=params.get("includeObject", "Metadata"))
        return {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                "metadata": metadata, "items": page}


def _position(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta.get("name", ""))

