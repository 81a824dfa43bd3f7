"""kube-scheduler HTTP extender serving placement's fit and binpack/topology scores.

kube-scheduler runs its own filters and scores, then POSTs the pod and the
surviving nodes to each configured extender (``k8s.io/kube-scheduler/extender/v1``):

``POST /filter``  body ``ExtenderArgs`` ``{"Pod": v1.Pod, "Nodes": v1.NodeList | null,
"NodeNames": [..] | null}`` → ``ExtenderFilterResult`` ``{"Nodes" | "NodeNames",
"FailedNodes": {name: reason}, "FailedAndUnresolvableNodes": {name: reason}, "Error"}``.
``POST /prioritize``  same body → ``HostPriorityList`` ``[{"Host": name, "Score": 0..10}]``;
kube-scheduler multiplies each score by the extender's ``weight`` and by 10
(MaxNodeScore / MaxExtenderPriority) and adds it to its own plugin scores.

The Go structs carry no JSON tags, so the field names are the capitalised Go
names; like Go's decoder we accept them in any letter case. An extender that
declares ``nodeCacheCapable: true`` receives only ``NodeNames`` and must know
the nodes itself: :class:`CacheFeeder` keeps a :class:`placement.cache.ClusterCache`
from node and pod watches (:class:`KubeWatcher`, a thin loop over the
``kubernetes`` client). Pods are watched in both modes because a Node object
does not say what runs on it, and binpacking needs that.

Extenders are shared by every profile of a KubeSchedulerConfiguration, so the
extender answers only for pods whose ``spec.schedulerName`` it serves
(``kuota-binpack`` by default); for other pods every node passes and every
score is 0, which leaves their scheduling unchanged.

Bad requests get HTTP 400 with ``{"Error": message}``; an unexpected failure
gets 500 with the same shape — the process never dies on a request.

**Limits** (:class:`Limits`, the command's flags). A malformed body is a 400
whatever is wrong with it: not JSON, not UTF-8, nested deeper than the
decoder recurses, numbers too long to convert, a wrong type at any field,
or a ``Content-Encoding`` (kube-scheduler never compresses; a gzip body
would otherwise be inflated before its size is known). The body is bounded
(:data:`DEFAULT_MAX_BODY`, 413 when ``Content-Length`` says more, before a
byte of it is read, or as soon as a chunked body passes it) and so is the
number of objects and arrays in it (one per :data:`BYTES_PER_CONTAINER`
bytes of the bound), because JSON decoding multiplies memory: 4 MiB of
``[[]]`` becomes 140 MB of lists; so is the number of candidate nodes
(:data:`MAX_NODES`), each of which costs an answer entry. A request has
``header_timeout`` to send its request line and headers (aiohttp's keep-alive
timer, which also covers a connection that sends nothing) and
``read_timeout`` to send its body (408), so a client that stops half way
holds only its socket, and only that long.

**Who may ask.** The answers steer where pods land, so only kube-scheduler may
ask. Deployed, the extender serves HTTPS and requires a client certificate
signed by a CA of its own (:func:`client_auth`, mutual TLS; kube-scheduler
presents it through its extender ``tlsConfig``): a caller without one is
refused in the TLS handshake, before a byte of HTTP is read — which matters
for a server that accepts request bodies of several MiB. The kubelet's
probes present no client certificate, so ``GET /healthz`` and ``/readyz``
are also served, and nothing else, on a separate plain-HTTP listener
(:func:`make_probe_app`); they reveal only liveness and the cache's size.
Certificates and the client CA are re-read from disk while serving
(:class:`kuota.operator.certs.ServingCertificate`, :func:`follow_certificate`),
so renewed files are taken up without a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import pathlib
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _quote  # json.dumps's own C quoter
from typing import Any, Final

from aiohttp import web

from kuota.operator.certs import ServingCertificate
from placement.cache import ClusterCache
from placement.fit import FitResult, check_fit
from placement.memo import NodeMemo
from placement.model import Node, PodRequirements
from placement.objects import ObjectError, node_from_object, object_name, pod_from_object
from placement.scoring import Scorer, to_extender_priority

log = logging.getLogger("kuota.extender")

#: Pod labels that name a gang, first present wins (kuota's, Kueue's pod groups, Jobs).
DEFAULT_GANG_LABELS: Final = ("kuota.dev/pod-group", "kueue.x-k8s.io/pod-group-name",
                              "batch.kubernetes.io/job-name")
DEFAULT_SCHEDULER_NAME: Final = "kuota-binpack"
#: The largest ExtenderArgs body accepted. In the shipped ``nodeCacheCapable``
#: mode a request is a Pod and the feasible node names: 5,000 nodes (Kubernetes'
#: largest tested cluster) named with the longest DNS subdomain (253 bytes) are
#: 1.3 MB, and a Pod at the API server's 1.5 MiB object limit brings that to
#: 2.8 MiB. With full Node objects (3-15 KB each) 4 MiB holds a few hundred
#: nodes: larger clusters use ``--node-cache`` or raise ``--max-body``.
DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
#: At most one JSON object or array per this many bytes of the body bound. A Node
#: as kube-scheduler sends it averages ~80 bytes per object or array, a Pod more;
#: the densest JSON (``[[],[],..]``) has 3, and each costs a 56-64 byte container.
BYTES_PER_CONTAINER: Final = 16
#: Candidate nodes per request: more than the largest Kubernetes clusters run.
#: Each costs a few hundred bytes of answer and bookkeeping, even a 3-byte name.
MAX_NODES: Final = 100_000
DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_READ_TIMEOUT: Final = 10.0
_FINISHED: Final = frozenset({"Succeeded", "Failed"})


class BadRequest(ValueError):
    """A request body that is not a usable ExtenderArgs."""


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    pod: Mapping[str, Any]
    #: The NodeList as sent (``items`` checked to be objects), or None.
    node_list: Mapping[str, Any] | None
    node_names: list[str] | None


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    """``obj[key]`` when present and of ``kind``; an empty ``kind()`` when absent or null."""
    value = obj.get(key) or kind()
    if not isinstance(value, kind):
        raise BadRequest(f"{where}.{key} must be {'a string' if kind is str else 'an object'}, "
                         f"not {type(value).__name__}")
    return value


def _check_pod(pod: Any) -> dict[str, Any]:
    """The fields read from the raw Pod before :func:`pod_from_object` checks the rest."""
    if not isinstance(pod, dict):
        raise BadRequest("ExtenderArgs.Pod must be a v1.Pod object")
    meta = _field(pod, "metadata", dict, "ExtenderArgs.Pod")
    _field(meta, "labels", dict, "ExtenderArgs.Pod.metadata")
    _field(meta, "namespace", str, "ExtenderArgs.Pod.metadata")
    _field(_field(pod, "spec", dict, "ExtenderArgs.Pod"), "schedulerName", str,
           "ExtenderArgs.Pod.spec")
    return pod


def _check_count(nodes: list[Any], where: str) -> None:
    if len(nodes) > MAX_NODES:
        raise BadRequest(f"{where}: {len(nodes)} nodes, more than {MAX_NODES}")


def parse_extender_args(body: Any) -> ExtenderArgs:
    if not isinstance(body, dict):
        raise BadRequest("ExtenderArgs must be a JSON object")
    fields = {str(k).lower(): v for k, v in body.items()}  # Go decodes names case-insensitively
    pod = _check_pod(fields.get("pod"))
    node_list, names = fields.get("nodes"), fields.get("nodenames")
    if node_list is not None:
        if not isinstance(node_list, dict) or not isinstance(node_list.get("items", []), list):
            raise BadRequest("ExtenderArgs.Nodes must be a v1.NodeList with an items list")
        items = node_list.get("items") or []
        _check_count(items, "ExtenderArgs.Nodes.items")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise BadRequest(f"ExtenderArgs.Nodes.items[{i}] must be a v1.Node object")
        return ExtenderArgs(pod, node_list, None)
    if names is not None:
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:
            raise BadRequest("ExtenderArgs.NodeNames must be a list of strings")
        _check_count(names, "ExtenderArgs.NodeNames")
        return ExtenderArgs(pod, None, names)
    raise BadRequest("ExtenderArgs needs Nodes (a v1.NodeList) or NodeNames")


def gang_key(pod: Mapping[str, Any], labels_in_order: Sequence[str]) -> str | None:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    for label in labels_in_order:
        value = labels.get(label)
        if value:
            return f"{meta.get('namespace') or ''}/{value}"
    return None


@dataclass(frozen=True, slots=True)
class ExtenderSettings:
    scorer: Scorer
    #: Pods whose spec.schedulerName is listed get answers; empty = every pod.
    scheduler_names: frozenset[str] = frozenset({DEFAULT_SCHEDULER_NAME})
    gang_labels: tuple[str, ...] = DEFAULT_GANG_LABELS
    ignored_resources: frozenset[str] = field(default_factory=frozenset)


class Extender:
    """Filter and prioritize over a cache; one method per verb, JSON-ready answers."""

    def __init__(self, settings: ExtenderSettings, cache: ClusterCache) -> None:
        self.settings = settings
        self.cache = cache
        ignored = settings.ignored_resources
        # Pods of one gang ask the same; nodes rarely change between calls.
        self._fit: NodeMemo[FitResult] = NodeMemo(
            lambda pod, nodes: [check_fit(n, pod, ignored_resources=ignored) for n in nodes])

    def serves(self, pod: Mapping[str, Any]) -> bool:
        if not self.settings.scheduler_names:
            return True
        name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        return name in self.settings.scheduler_names

    def _pod(self, args: ExtenderArgs) -> PodRequirements:
        try:
            return pod_from_object(args.pod)
        except ObjectError as exc:
            raise BadRequest(f"ExtenderArgs.Pod: {exc}") from None

    def _nodes(self, args: ExtenderArgs) -> list[tuple[str, Node | None]]:
        """(name, node) per candidate; None when a named node is not cached."""
        if args.node_names is not None:
            return list(zip(args.node_names, self.cache.lookup(args.node_names), strict=True))
        out: list[tuple[str, Node | None]] = []
        for i, item in enumerate((args.node_list or {}).get("items") or []):
            try:
                node = node_from_object(item)
            except ObjectError as exc:
                raise BadRequest(f"ExtenderArgs.Nodes.items[{i}]: {exc}") from None
            out.append((node.name, self.cache.with_usage(node)))
        return out

    def filter(self, args: ExtenderArgs) -> dict[str, Any]:
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        if self.serves(args.pod):
            pod = self._pod(args)
            candidates = self._nodes(args)
            known = [node for _, node in candidates if node is not None]
            results = iter(self._fit.answers(pod, known))
            for name, node in candidates:
                if node is None:
                    unresolvable[name] = "node is not in the kuota extender's cache yet"
                    continue
                result = next(results)
                if result.reasons:
                    target = unresolvable if result.unresolvable else failed
                    target[name] = ", ".join(result.reasons)
        rejected = failed.keys() | unresolvable.keys()
        answer: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": failed,
                                  "FailedAndUnresolvableNodes": unresolvable, "Error": ""}
        if args.node_names is not None:
            answer["NodeNames"] = [n for n in args.node_names if n not in rejected]
        else:
            node_list = dict(args.node_list or {})
            node_list["items"] = [item for item in node_list.get("items") or []
                                  if object_name(item) not in rejected]
            answer["Nodes"] = node_list
        return answer

    def prioritize(self, args: ExtenderArgs) -> list[tuple[str, int]]:
        """(host, score 0..10) per candidate, in request order; unknown nodes score 0."""
        candidates = self._nodes(args)
        if not self.serves(args.pod):
            return [(name, 0) for name, _ in candidates]
        pod = self._pod(args)
        known = [node for _, node in candidates if node is not None]
        gang = gang_key(args.pod, self.settings.gang_labels)
        peers = [] if gang is None else [
            node for node in self.cache.lookup(self.cache.gang_nodes(gang)) if node is not None]
        scores = iter(self.settings.scorer.score_nodes(pod, known, peers))
        return [(name, 0 if node is None else to_extender_priority(next(scores)))
                for name, node in candidates]


def encode_host_priorities(priorities: Sequence[tuple[str, int]]) -> str:
    """A HostPriorityList as JSON text. Formatting each entry directly is about
    four times faster than building dicts for ``json.dumps`` at 5,000 nodes."""
    return "[" + ",".join([f'{{"Host":{_quote(host)},"Score":{score:d}}}'
                           for host, score in priorities]) + "]"


# -- HTTP ---------------------------------------------------------------------

EXTENDER_KEY: Final = web.AppKey("extender", Extender)


@web.middleware
async def _errors(request: web.Request,
                  handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except BadRequest as exc:
        return web.json_response({"Error": str(exc)}, status=400)
    except web.HTTPException:
        raise
    except Exception as exc:  # a request must never take the process down
        log.exception("extender: %s %s failed", request.method, request.path)
        return web.json_response({"Error": f"internal error: {exc}"}, status=500)


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may cost: see the module docstring."""

    max_body: int = DEFAULT_MAX_BODY
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT

    @property
    def max_containers(self) -> int:
        return self.max_body // BYTES_PER_CONTAINER

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments for ``web.AppRunner``/``web.run_app`` serving under these limits."""
        # keepalive_timeout: aiohttp starts it with the connection and closes one whose
        # request has not arrived whole by then. lingering_time: how long the rest of a
        # refused body is drained before the connection is closed.
        return {"keepalive_timeout": self.header_timeout, "lingering_time": self.read_timeout,
                "auto_decompress": False}


LIMITS_KEY: Final = web.AppKey("limits", Limits)


def _too_large(limits: Limits, what: str) -> web.HTTPRequestEntityTooLarge:
    return web.HTTPRequestEntityTooLarge(
        max_size=limits.max_body, actual_size=0,
        text=json.dumps({"Error": f"request body {what}: at most {limits.max_body} bytes and "
                                  f"{limits.max_containers} JSON objects and arrays (--max-body)"}),
        content_type="application/json")


async def _read_body(request: web.Request, limits: Limits) -> bytes:
    """The raw body within the size bound and the read timeout."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding != "identity":
        raise BadRequest(f"Content-Encoding {encoding!r} is not supported: send plain JSON")
    if (request.content_length or 0) > limits.max_body:
        raise _too_large(limits, f"of {request.content_length} bytes is too large")
    try:
        async with asyncio.timeout(limits.read_timeout):
            return await request.read()  # stops past client_max_size, the same bound
    except web.HTTPRequestEntityTooLarge:  # a chunked body, or one longer than it said
        raise _too_large(limits, "is too large") from None
    except TimeoutError:
        raise web.HTTPRequestTimeout(
            text=json.dumps({"Error": f"request body not received within "
                                      f"{limits.read_timeout:g}s (--read-timeout)"}),
            content_type="application/json") from None


def decode_body(raw: bytes, limits: Limits) -> Any:
    """JSON from the body; :class:`BadRequest` for anything the decoder refuses."""
    if raw.count(b"{") + raw.count(b"[") > limits.max_containers:  # counts brackets in strings too
        raise _too_large(limits, "holds too many objects and arrays")
    try:
        return json.loads(raw)  # bytes: UTF-8 (or -16/-32) detected as RFC 8259 allows
    except UnicodeDecodeError as exc:
        raise BadRequest(f"request body is not UTF-8: {exc}") from None
    except RecursionError:
        raise BadRequest("request body is not JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError; an integer too long to convert
        raise BadRequest(f"request body is not JSON: {exc}") from None


async def _read_args(request: web.Request) -> ExtenderArgs:
    limits = request.app[LIMITS_KEY]
    return parse_extender_args(decode_body(await _read_body(request, limits), limits))


def _timed_json(body: str, started: float) -> web.Response:
    took = (time.perf_counter() - started) * 1000
    # Server-Timing (a W3C header) lets operators and benchmarks see the
    # extender's own share of kube-scheduler's call.
    return web.Response(text=body, content_type="application/json",
                        headers={"Server-Timing": f"app;dur={took:.2f}"})


async def _filter(request: web.Request) -> web.Response:
    started = time.perf_counter()
    args = await _read_args(request)
    answer = request.app[EXTENDER_KEY].filter(args)
    try:
        text = json.dumps(answer, separators=(",", ":"))
    except RecursionError:  # the echoed NodeList nests as deep as the request did
        raise BadRequest("ExtenderArgs.Nodes: nested too deeply") from None
    return _timed_json(text, started)


async def _prioritize(request: web.Request) -> web.Response:
    started = time.perf_counter()
    args = await _read_args(request)
    priorities = request.app[EXTENDER_KEY].prioritize(args)
    return _timed_json(encode_host_priorities(priorities), started)


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    cache = request.app[EXTENDER_KEY].cache
    if not cache.synced:
        return web.Response(status=503, text="cache not synced yet")
    return web.Response(text=f"ok: {len(cache)} nodes, {cache.pod_count} bound pods")


def make_app(extender: Extender, limits: Limits = Limits()) -> web.Application:
    """The extender's routes; serve it with ``limits.server_options()``."""
    app = make_probe_app(extender, limits)
    app.router.add_post("/filter", _filter)
    app.router.add_post("/prioritize", _prioritize)
    return app


def make_probe_app(extender: Extender, limits: Limits = Limits()) -> web.Application:
    """Only ``GET /healthz`` and ``/readyz``: what may be served without authentication."""
    app = web.Application(middlewares=[_errors], client_max_size=limits.max_body)
    app[EXTENDER_KEY] = extender
    app[LIMITS_KEY] = limits
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    return app


#: What ``web.Application.cleanup_ctx`` takes: set up before the yield, torn down after.
CleanupContext = Callable[[web.Application], AsyncIterator[None]]


def serving_alongside(app: web.Application, host: str, port: int) -> CleanupContext:
    """Serve ``app`` over plain HTTP on ``host:port`` while the main app runs.

    No access log: the kubelet probes every few seconds.
    """
    async def serve(_: web.Application) -> AsyncIterator[None]:
        runner = web.AppRunner(app, access_log=None, **app[LIMITS_KEY].server_options())
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            log.info("extender: probes served on http://%s:%d", host, port)
            yield
        finally:
            await runner.cleanup()
    return serve


def running(start: Callable[[], Awaitable[None]]) -> CleanupContext:
    """Run ``start()`` as a task while the main app runs; cancel it at shutdown."""
    async def run(_: web.Application) -> AsyncIterator[None]:
        task = asyncio.ensure_future(start())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return run


# -- TLS ------------------------------------------------------------------------

#: How often the certificate files are compared with what is served.
CERT_CHECK_SECONDS: Final = 10.0


def client_auth(client_ca: str | pathlib.Path) -> Callable[[ssl.SSLContext], None]:
    """Completes a server context: a client certificate signed by ``client_ca`` is required.

    Required, not optional: the handshake of a client without one fails, so an
    unauthenticated caller never reaches the HTTP parser. The CA file is read
    into every new context, so a rotated client CA is taken up with the next
    renewal of the serving pair (its digest includes the CA file).
    """
    def configure(context: ssl.SSLContext) -> None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(client_ca))
    return configure


def serving_certificate(certfile: str, keyfile: str,
                        client_ca: str | None = None) -> ServingCertificate:
    """The extender's serving certificate, requiring clients of ``client_ca`` if given.

    Raises :class:`ssl.SSLError` for files that are not a matching certificate and
    key or not a CA bundle, :class:`OSError` for missing or unreadable ones.
    """
    return ServingCertificate(certfile, keyfile, client_ca,
                              configure=client_auth(client_ca) if client_ca else None,
                              purpose="extender")


async def follow_certificate(certificate: ServingCertificate,
                             interval: float = CERT_CHECK_SECONDS) -> None:
    """Serve each renewal of the files from the next handshake on; runs until cancelled.

    No trust delay as for the webhook: kube-scheduler trusts the extender's CA
    file, which a renewed serving certificate from the same CA does not change.
    """
    while True:
        await asyncio.sleep(interval)
        pair = certificate.renewed()
        if pair is not None:
            certificate.serve(pair)


# -- cache feeding ------------------------------------------------------------

def settle_heap() -> None:
    """Collect, then move every surviving object out of the garbage collector's view.

    The cache holds hundreds of thousands of long-lived objects; a full
    collection walks them all and stalls a request by tens of milliseconds
    (measured: 40-50 ms at 5,000 nodes and 10,000 pods). Cache objects are
    freed by reference counting when replaced, so freezing them after a
    (re)list loses nothing and removes those stalls.
    """
    gc.collect()
    gc.freeze()


class CacheFeeder:
    """Watch events (type + object JSON) → cache calls. A malformed object is
    logged and skipped; it never stops the stream."""

    def __init__(self, cache: ClusterCache, gang_labels: Sequence[str] = DEFAULT_GANG_LABELS):
        self.cache = cache
        self.gang_labels = tuple(gang_labels)

    def node_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            self.cache.delete_node(object_name(obj))
            return
        try:
            self.cache.upsert_node(node_from_object(obj))
        except ObjectError as exc:
            log.warning("extender: skipping node event: %s", exc)

    def pod_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        uid = str((obj.get("metadata") or {}).get("uid") or object_name(obj))
        if kind == "DELETED":
            self.cache.delete_pod(uid)
            return
        try:
            pod = pod_from_object(obj)
        except ObjectError as exc:
            log.warning("extender: skipping pod event: %s", exc)
            return
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        self.cache.upsert_pod(uid, spec.get("nodeName") or None, pod,
                              finished=status.get("phase") in _FINISHED,
                              gang=gang_key(obj, self.gang_labels))

    def replace_nodes(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """A fresh list: forget nodes it lacks, then take every one of it."""
        present = {object_name(o) for o in objs}
        for name in self.cache.node_names():
            if name not in present:
                self.cache.delete_node(name)
        for obj in objs:
            self.node_event("ADDED", obj)

    def replace_pods(self, objs: Sequence[Mapping[str, Any]]) -> None:
        present = {str((o.get("metadata") or {}).get("uid") or object_name(o)) for o in objs}
        for uid in self.cache.pod_uids():
            if uid not in present:
                self.cache.delete_pod(uid)
        for obj in objs:
            self.pod_event("ADDED", obj)


class KubeWatcher:
    """List-then-watch loops over the kubernetes client, one thread per kind.

    The client blocks, so each loop runs in a daemon thread and hands every
    list and event to the event loop (``call_soon_threadsafe``): the cache is
    only ever touched from the loop's thread. A lost watch relists.
    """

    def __init__(self, feeder: CacheFeeder, loop: asyncio.AbstractEventLoop, api: Any, *,
                 watch_nodes: bool) -> None:
        self.feeder, self.loop, self.api = feeder, loop, api
        self.kinds = ("nodes", "pods") if watch_nodes else ("pods",)
        self._listed: set[str] = set()
        self.stop = threading.Event()

    def start(self) -> None:
        for kind in self.kinds:
            threading.Thread(target=self._run, args=(kind,), name=f"watch-{kind}",
                             daemon=True).start()

    def _mark_listed(self, kind: str) -> None:
        self._listed.add(kind)
        self.feeder.cache.synced = self._listed >= set(self.kinds)
        if self.feeder.cache.synced:
            settle_heap()

    def _run(self, kind: str) -> None:
        from kubernetes import watch  # the edge's client, imported where used

        list_fn = (self.api.list_node if kind == "nodes"
                   else self.api.list_pod_for_all_namespaces)
        replace = self.feeder.replace_nodes if kind == "nodes" else self.feeder.replace_pods
        on_event = self.feeder.node_event if kind == "nodes" else self.feeder.pod_event
        version: str | None = None  # None: (re)list first
        while not self.stop.is_set():
            try:
                if version is None:
                    raw = json.loads(list_fn(_preload_content=False).data)
                    self.loop.call_soon_threadsafe(replace, raw.get("items") or [])
                    self.loop.call_soon_threadsafe(self._mark_listed, kind)
                    version = (raw.get("metadata") or {}).get("resourceVersion") or ""
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    list_fn, resource_version=version, timeout_seconds=300)
                for event in stream:
                    if self.stop.is_set():
                        return
                    obj = event["raw_object"]
                    if event["type"] == "ERROR":  # e.g. 410 Gone: our version expired
                        raise RuntimeError(obj.get("message") or "watch error")
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    self.loop.call_soon_threadsafe(on_event, event["type"], obj)
            except Exception as exc:
                log.warning("extender: %s watch failed (%s); relisting", kind, exc)
                version = None
                self.stop.wait(2.0)
