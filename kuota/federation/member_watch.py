"""Following a Kubernetes member's nodes and pods without listing them every interval.

A member is observed every ``--member-interval`` seconds (10 by default). Listing
every node and pod each time costs the member's API server a full read of
both and the operator a decode of every object: for 2,000 nodes and 20,000
pods some 40 MB per member and interval (``benchmarks/member_observation.py``).
Instead each member is *mirrored*, the way client-go's informers do it:

* **list once, in pages.** ``limit`` + ``continue`` (:data:`PAGE` objects a
  request), so no single answer is huge. The list's ``resourceVersion`` is
  where the watch starts. A ``continue`` token the server no longer honours
  (410 *Expired*: etcd compacted the revision the list started at) starts the
  list over (:func:`read_pages`).
* **then watch.** ``watch=true&resourceVersion=<list's>`` with
  ``allowWatchBookmarks``: the server sends each change once, and bookmarks
  carry the version forward while nothing changes, so a watch reopened after
  the server ended it (``timeoutSeconds``: 5 to 10 minutes, as client-go) or
  after a network failure resumes where it left off without a list. A 410
  *Gone* (the version is too old) relists.
* **read only what is needed.** Pods are selected on the server by
  :data:`.observation.POD_FIELDS` — bound, neither Succeeded nor Failed — so
  finished pods, the bulk of a batch cluster, never travel; a pod that ends
  arrives as a deletion. Each object is reduced as it arrives
  (:mod:`.observation`), so the mirror keeps small values, not whole objects.

Each watch is read by its own daemon thread; the observation task (run by the
member's worker thread, :mod:`.tasks`) only reads the mirror — after checking
that the member answers: the copies this manager sent there are listed by
their label (few objects: Jobs, and JobSets where the member serves them; their
status is what is followed home), which
is also the health check, exactly as before. A watch that broke is reopened
by the next observation, in the task, so a member that cannot be watched (RBAC
without ``watch``, say) fails its observations with the reason instead of
being reported from a stale mirror.

Mirrors live across tasks, one per (kubeconfig, manager); one that no
observation has read for :data:`IDLE` seconds (its MemberCluster was deleted,
its kubeconfig changed, this replica stopped leading) stops watching when its
watches next end and is dropped; :func:`close_all` stops them at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, Generic, TypeVar

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from kuota.federation import copies, observation
from kuota.federation.member import Observation
from kuota.federation.remote_job import ORIGIN_LABEL
from placement.model import Node
from placement.objects import ObjectError

log = logging.getLogger(__name__)
Body = dict[str, Any]
T = TypeVar("T")

#: (connect, read) seconds for each list request to a member.
TIMEOUT: Final = (3.0, 10.0)
#: Objects per list request.
PAGE: Final = 500
#: How long a watch runs before the server ends it (a random time in this range, as
#: client-go: reconnections of many watchers spread out).
WATCH_SECONDS: Final = (300, 600)
#: A mirror no observation read for this long stops (seconds).
IDLE: Final = 600.0
#: Restarts of a list whose continue tokens keep expiring before giving up (the next
#: observation tries again).
LIST_RESTARTS: Final = 3


class Gone(Exception):
    """The version a watch starts from is too old (410): list again."""


class WatchError(Exception):
    """A watch ended with an error the server sent (not a 410)."""


def read_pages(call: Callable[..., Any], **query: Any) -> tuple[list[Body], str]:
    """Every item of a list and the list's resourceVersion, read :data:`PAGE` at a time;
    a list whose continue token expired (410) is started over."""
    for attempt in range(LIST_RESTARTS + 1):
        items: list[Body] = []
        token: str | None = None
        try:
            while True:
                response = call(limit=PAGE, _continue=token, _preload_content=False,
                                _request_timeout=TIMEOUT, **query)
                page = json.loads(response.data)
                items += page.get("items") or []
                meta = page.get("metadata") or {}
                token = meta.get("continue")
                if not token:
                    return items, str(meta.get("resourceVersion") or "")
        except ApiException as exc:
            if exc.status != 410 or token is None or attempt == LIST_RESTARTS:
                raise
            log.info("list expired while paging (%s); listing again", exc.reason)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


class Informer(Generic[T]):
    """One resource of one member, listed in pages once and then watched.

    ``reduce`` turns an object into the value kept for it (None: nothing to keep; an
    :class:`ObjectError` is kept as a problem of that object instead).
    """

    def __init__(self, what: str, call: Callable[..., Any],
                 reduce: Callable[[Body], T | None], *, query: Mapping[str, Any] | None = None,
                 active: Callable[[], bool] = lambda: True,
                 rng: random.Random | None = None) -> None:
        self.what = what
        self._call = call
        self._reduce = reduce
        self._query = dict(query or {})
        self._active = active
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._items: dict[str, T] = {}
        self._problems: dict[str, str] = {}
        self._version: str | None = None
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._stop = threading.Event()
        #: How many times it was listed and a watch opened (for tests and benchmarks).
        self.lists = 0
        self.watches = 0
        #: Why its watch thread last stopped, if it failed.
        self.error: str | None = None

    @property
    def version(self) -> str | None:
        """The resourceVersion the mirror has reached (None before the first list)."""
        return self._version

    def snapshot(self) -> tuple[list[T], list[str]]:
        with self._lock:
            return list(self._items.values()), list(self._problems.values())

    def sync(self) -> None:
        """Be watching: list first if needed, reopen a watch that ended; raises the API
        error when the member cannot be listed or watched."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        response = self._connect()
        self._thread = threading.Thread(target=self._run, args=(response,), daemon=True,
                                        name=f"member-watch-{self.what}")
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None and response.connection is not None:
            # Wakes the thread blocked in a read. Losing the race to the thread's own release
            # of the connection (RuntimeError) means the watch has ended already.
            with contextlib.suppress(RuntimeError):
                response.shutdown()
        if self._thread is not None:
            self._thread.join(2.0)

    # -- listing and watching ----------------------------------------------------------------
    def _connect(self) -> Any:
        if self._version is None:
            self._relist()
        try:
            return self._open()
        except Gone:
            self._relist()
            return self._open()

    def _relist(self) -> None:
        items, version = read_pages(self._call, **self._query)
        fresh: dict[str, T] = {}
        problems: dict[str, str] = {}
        for obj in items:
            self._keep(fresh, problems, _key(obj), obj)
        with self._lock:
            self._items, self._problems, self._version = fresh, problems, version
        self.lists += 1

    def _open(self) -> Any:
        if self._stop.is_set():  # closed while listing: do not start another watch
            raise WatchError(f"the watch of {self.what} was closed")
        seconds = self._rng.randint(*WATCH_SECONDS)
        try:
            response = self._call(watch=True, resource_version=self._version,
                                  allow_watch_bookmarks=True, timeout_seconds=seconds,
                                  _preload_content=False,
                                  # silence is normal on a watch; the server ends it on time
                                  _request_timeout=(TIMEOUT[0], seconds + 30), **self._query)
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(exc.reason) from exc
            raise
        self.watches += 1
        self._response = response
        self.error = None
        return response

    def _run(self, response: Any) -> None:
        """The watch thread: apply events; when the server ends the watch, reopen it (or
        list again after a 410) while the mirror is in use; stop on any other failure (the
        next observation reopens it and reports the error if it persists)."""
        while True:
            try:
                try:
                    self._consume(response)
                finally:
                    response.release_conn()
                if self._stop.is_set() or not self._active():
                    return
                response = self._connect()
            except Gone:
                if self._stop.is_set():
                    return
                with self._lock:
                    self._version = None
                try:
                    response = self._connect()
                except Exception as exc:  # reported by the next observation's sync()
                    self.error = f"{self.what}: {exc}"
                    return
            except Exception as exc:  # a broken connection, an error event...
                if not self._stop.is_set():
                    self.error = f"{self.what}: {exc}"
                    log.info("watch of %s stopped: %s", self.what, exc)
                return

    def _consume(self, response: Any) -> None:
        pending = bytearray()
        for chunk in response.stream(None, decode_content=False):
            pending += chunk
            while (end := pending.find(b"\n")) >= 0:
                line = bytes(pending[:end])
                del pending[:end + 1]
                if line.strip():
                    self._event(json.loads(line))

    def _event(self, event: Body) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(str(obj.get("message") or ""))
            raise WatchError(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        key = _key(obj)
        with self._lock:
            if kind in ("ADDED", "MODIFIED"):
                self._keep(self._items, self._problems, key, obj)
            elif kind == "DELETED":
                self._items.pop(key, None)
                self._problems.pop(key, None)
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self._version = str(version)

    def _keep(self, items: dict[str, T], problems: dict[str, str], key: str, obj: Body) -> None:
        try:
            value = self._reduce(obj)
        except ObjectError as exc:
            items.pop(key, None)
            problems[key] = str(exc)
            return
        problems.pop(key, None)
        if value is None:
            items.pop(key, None)
        else:
            items[key] = value


class MemberMirror:
    """A member's nodes and pods, followed; its copies, listed at each observation."""

    def __init__(self, api_client: Any, origin: str, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        core, batch = k8s.CoreV1Api(api_client), k8s.BatchV1Api(api_client)
        custom = k8s.CustomObjectsApi(api_client)
        self._clock = clock
        self.used = clock()
        self._lock = threading.Lock()
        self.nodes: Informer[Node] = Informer("nodes", core.list_node, observation.node_of,
                                              active=self.active)
        self.pods: Informer[observation.PodUse] = Informer(
            "pods", core.list_pod_for_all_namespaces,
            partial(observation.pod_use, origin=origin),
            query={"field_selector": observation.POD_FIELDS}, active=self.active)
        ours = f"{ORIGIN_LABEL}={origin}"
        jobsets = copies.DISPATCHED["JobSet"]
        #: How this manager's copies of each kind are listed (by their origin label).
        self._copies: dict[str, Callable[..., Any]] = {
            "Job": partial(batch.list_job_for_all_namespaces, label_selector=ours),
            "JobSet": partial(custom.list_cluster_custom_object, jobsets.group,
                              jobsets.version, jobsets.plural, label_selector=ours)}

    def active(self) -> bool:
        return self._clock() - self.used < IDLE

    def observe(self) -> Observation:
        with self._lock:
            self.used = self._clock()
            # Our copies first: few, always fresh (their status goes home), and the member's
            # health check — an unreachable member fails here, quickly.
            found = self._list_copies()
            self.nodes.sync()
            self.pods.sync()
            nodes, node_problems = self.nodes.snapshot()
            pods, pod_problems = self.pods.snapshot()
        return observation.observation({node.name: node for node in nodes}, pods, found,
                                       node_problems + pod_problems)

    def _list_copies(self) -> list[Body]:
        """Our copies of every kind, each body given its ``kind`` (a list's items have
        none). A kind the member does not serve (no JobSet CRD there: 404) has none."""
        found: list[Body] = []
        for kind, call in self._copies.items():
            try:
                items, _ = read_pages(call)
            except ApiException as exc:
                if exc.status != 404 or kind == "Job":
                    raise
                continue
            found += [{**item, "kind": kind} for item in items]
        return found

    def close(self) -> None:
        self.nodes.close()
        self.pods.close()


_mirrors: dict[tuple[str, str], MemberMirror] = {}
_mirrors_lock = threading.Lock()


def mirror(key: str, api_client: Any, origin: str) -> MemberMirror:
    """The mirror of the member reached with ``api_client`` (``key``: its kubeconfig's
    digest) for manager ``origin``; idle mirrors of other members are dropped."""
    with _mirrors_lock:
        for other, idle in list(_mirrors.items()):
            if other != (key, origin) and not idle.active():
                idle.close()
                del _mirrors[other]
        found = _mirrors.get((key, origin))
        if found is None:
            found = _mirrors[(key, origin)] = MemberMirror(api_client, origin)
        return found


def close_all() -> None:
    """Stop every mirror's watches (the operator stops leading or exits)."""
    with _mirrors_lock:
        mirrors = list(_mirrors.values())
        _mirrors.clear()
    for found in mirrors:
        found.close()
