"""The emulator's object store: what etcd plus the generic registry do in a real server.

Objects are JSON dicts kept per resource ``(group, plural)`` and
``(namespace, name)``. One counter stands for etcd's revision: every write
(create, update, patch, delete, and the deletionTimestamp a delete sets on an
object with finalizers) takes the next number as the object's
``metadata.resourceVersion``, and a list carries the counter's value. A write
that names a ``resourceVersion`` other than the stored one fails with 409
Conflict; a write that changes nothing is a no-op and keeps the old version.

The rules the real server applies on the way in are here too:

* create: ``generateName``, ``uid``, ``creationTimestamp``, ``generation``,
  name and label syntax, the namespace must exist; ``status`` is dropped when
  the resource has a status subresource (as the real strategies do).
* update: the main resource ignores ``status`` and the status subresource
  ignores everything but ``status``; ``generation`` grows when anything but
  metadata (and status) changes; custom resources need a resourceVersion on PUT.
* delete: with finalizers, only ``deletionTimestamp`` is set; the object goes
  when its last finalizer is removed. Dependents (``ownerReferences``) are
  orphaned, deleted in the background, or deleted first (foreground), as the
  request or the resource's default asks; pods scheduled to a node terminate
  gracefully; a namespace takes its objects with it (see :mod:`.deletion`).
* custom resources are pruned, defaulted and validated by their CRD's schema
  (see :mod:`.schema`); CRDs become servable types (see :mod:`.resources`).

Every change is appended to a bounded event log; watchers get the log after a
given resourceVersion and then each new event through a callback. The store is
thread-safe: the HTTP server runs in its own thread while tests seed and read
objects from theirs. Callbacks run under the store's lock and must not block.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import itertools
import random
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import deletion, errors, patches, rules
from .patches import clone
from .resources import CRD_GROUP, Registry, ResourceType
from .rules import meta_of, timestamp, utc_now
from .selectors import Matcher

Obj = dict[str, Any]
ObjKey = tuple[str | None, str]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"

_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "generation", "name", "namespace")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclasses.dataclass(frozen=True)
class Event:
    """One change, as watchers see it; ``prev`` is the state before (None when added)."""

    rv: int
    type: str
    key: tuple[str, str]
    namespace: str | None
    obj: Obj
    prev: Obj | None


Subscriber = Callable[[Event], None]


def _payload(obj: Mapping[str, Any], rtype: ResourceType) -> dict[str, Any]:
    """What ``generation`` tracks: everything but metadata (and status if it has its own)."""
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if rtype.has_status else set())
    return {k: v for k, v in obj.items() if k not in skip}


class Store:
    """Objects, resource versions and the event log of one emulated cluster."""

    def __init__(
        self,
        registry: Registry | None = None,
        *,
        clock: Callable[[], datetime.datetime] = utc_now,
        history: int = 20_000,
        require_namespaces: bool = True,
        seed: int | None = None,
    ) -> None:
        self.registry = registry or Registry()
        self._clock = clock
        self._require_namespaces = require_namespaces
        self._random = random.Random(seed)
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str], dict[ObjKey, Obj]] = collections.defaultdict(dict)
        self._rv = 0
        self._log: collections.deque[Event] = collections.deque(maxlen=history)
        self._subscribers: dict[int, tuple[tuple[str, str], str | None, Subscriber]] = {}
        self._ids = itertools.count()
        #: Owners being deleted in the foreground, by uid, until their blocking dependents go.
        self._foreground: dict[str, tuple[ResourceType, str | None, str]] = {}
        namespaces = self.registry.get("", "v1", "namespaces")
        assert namespaces is not None
        for name in _DEFAULT_NAMESPACES:
            self.create(namespaces, None, {"metadata": {"name": name}})

    # --- reading ------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj:
        with self._lock:
            return self._out(rtype, self._require(rtype, namespace, name))

    def list_objects(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        matchers: Iterable[Matcher] = (),
    ) -> tuple[list[Obj], int]:
        """Objects (of one namespace, or all) that every matcher accepts, and the list's rv."""
        items, rv, _ = self.list_page(rtype, namespace, matchers)
        return items, rv

    def list_page(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        matchers: Iterable[Matcher] = (),
        *,
        after: tuple[str, str] | None = None,
        limit: int = 0,
    ) -> tuple[list[Obj], int, int]:
        """Up to ``limit`` (0: all) matching objects ordered after the ``(namespace, name)``
        ``after``, the list's rv and how many more match. Only the page is copied, so
        reading a large list page by page stays cheap."""
        tests = list(matchers)
        with self._lock:
            bucket = self._objects.get(rtype.key, {})
            page: list[Obj] = []
            more = 0
            for position, obj in sorted(((_order(item), item[1]) for item in bucket.items()),
                                        key=lambda found: found[0]):
                if (after is not None and position <= after) \
                        or (namespace is not None and position[0] != namespace) \
                        or not all(test(obj) for test in tests):
                    continue
                if limit and len(page) >= limit:
                    more += 1
                else:
                    page.append(obj)
            return [self._out(rtype, obj) for obj in page], self._rv, more

    # --- writing ------------------------------------------------------------------------------

    def create(self, rtype: ResourceType, namespace: str | None, body: Mapping[str, Any], *,
               keep_status: bool = True) -> Obj:
        """Store a new object; ``keep_status=False`` is what the HTTP API does."""
        with self._lock:
            obj: Obj = clone(dict(body))
            meta = obj.setdefault("metadata", {})
            if not isinstance(meta, dict):
                raise errors.bad_request(f"metadata of a new {rtype.kind} must be an object")
            namespace = self._check_namespace(rtype, namespace, meta)
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise errors.invalid(rtype, "", ["metadata.name: Required value: name or "
                                                     "generateName is required"])
                meta["name"] = self._generate_name(rtype, namespace, meta["generateName"])
            name = meta["name"]
            if (namespace, name) in self._objects[rtype.key]:
                raise errors.already_exists(rtype, name)
            if not keep_status and rtype.has_status:
                obj.pop("status", None)
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(field, None)
            meta.update(uid=str(uuid.UUID(int=self._random.getrandbits(128), version=4)),
                        creationTimestamp=timestamp(self._clock()), generation=1)
            obj = self._admit(rtype, obj, None)
            return self._out(rtype, self._commit(rtype, namespace, name, obj, None))

    def replace(self, rtype: ResourceType, namespace: str | None, name: str,
                body: Mapping[str, Any], *, subresource: str | None = None) -> Obj:
        """PUT: the whole object (or its status), guarded by the body's resourceVersion."""
        with self._lock:
            new: Obj = clone(dict(body))
            rv = meta_of(new).get("resourceVersion")
            if not rv and rtype.custom:
                raise errors.invalid(rtype, name, ["metadata.resourceVersion: Invalid value: "
                                                   "0x0: must be specified for an update"])
            return self._update(rtype, namespace, name, new, subresource)

    def patch(self, rtype: ResourceType, namespace: str | None, name: str, patch_type: str,
              patch: Any, *, subresource: str | None = None) -> Obj:
        """PATCH in one of the three formats (see :mod:`.patches`)."""
        with self._lock:
            old = self._require(rtype, namespace, name)
            try:
                if patch_type == JSON_PATCH:
                    new = patches.json_patch(old, patch)
                elif patch_type == MERGE_PATCH:
                    new = patches.merge_patch(old, patch)
                elif patch_type == STRATEGIC_PATCH and not rtype.custom:
                    new = patches.strategic_merge_patch(old, patch)
                else:
                    raise errors.unsupported_media_type(
                        f"the body of the request was in an unknown format - accepted media "
                        f"types include: {JSON_PATCH}, {MERGE_PATCH}"
                        + ("" if rtype.custom else f", {STRATEGIC_PATCH}"))
            except patches.PatchError as exc:
                raise errors.invalid(rtype, name, [str(exc)]) from exc
            if not isinstance(new, dict):
                raise errors.bad_request(f"the patch of {rtype} {name!r} does not yield an object")
            return self._update(rtype, namespace, name, new, subresource)

    def delete(self, rtype: ResourceType, namespace: str | None, name: str, *,
               preconditions: Mapping[str, Any] | None = None,
               propagation: str | None = None, grace_period: int | None = None) -> Obj:
        """Delete now, or mark for deletion (finalizers, a pod's grace period, foreground or
        orphan propagation); returns the last state. ``propagation`` None: the resource's
        default (see :mod:`.deletion`)."""
        with self._lock:
            obj = self._require(rtype, namespace, name)
            meta = meta_of(obj)
            for field in ("uid", "resourceVersion"):
                wanted = (preconditions or {}).get(field)
                if wanted and wanted != meta.get(field):
                    raise errors.conflict(rtype, name, f"Precondition failed: {field} in "
                                          f"precondition: {wanted}, {field} in object meta: "
                                          f"{meta.get(field)}")
            policy = deletion.propagation(rtype.key, propagation)
            return self._out(rtype, self._delete(rtype, namespace, name, policy, grace_period))

    # --- watching -----------------------------------------------------------------------------

    def watch(self, rtype: ResourceType, namespace: str | None, since: int | None,
              callback: Subscriber) -> tuple[list[Event], Callable[[], None]]:
        """Events after ``since`` (or the current objects as ADDED when None), then live ones.

        Returns the backlog and an unsubscribe function; ``callback`` gets every
        later event of the resource (and namespace, if given) in order.
        Raises 410 Gone when ``since`` is older than the retained log.
        """
        with self._lock:
            if since is None:
                backlog = [Event(self._rv, "ADDED", rtype.key, ns, obj, None)
                           for (ns, _), obj in sorted(self._objects[rtype.key].items(),
                                                      key=_order)
                           if namespace is None or ns == namespace]
            else:
                if self.compacted(since):
                    raise errors.gone(f"too old resource version: {since} "
                                      f"({self._oldest() - 1})")
                backlog = [event for event in self._log
                           if event.rv > since and event.key == rtype.key
                           and (namespace is None or event.namespace == namespace)]
            token = next(self._ids)
            self._subscribers[token] = (rtype.key, namespace, callback)

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.pop(token, None)

        return backlog, unsubscribe

    def compacted(self, rv: int) -> bool:
        """Whether the changes after ``rv`` are no longer all in the log (etcd compacted
        them): a watch or a list continued from ``rv`` cannot be served."""
        with self._lock:
            return rv < self._oldest() - 1 and rv < self._rv

    def _oldest(self) -> int:
        return self._log[0].rv if self._log else self._rv + 1

    # --- internals ----------------------------------------------------------------------------

    def _out(self, rtype: ResourceType, obj: Obj) -> Obj:
        result: Obj = clone(obj)
        result["apiVersion"] = rtype.api_version
        result["kind"] = rtype.kind
        return result

    def _require(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self._objects[rtype.key].get((namespace if rtype.namespaced else None, name))
        if obj is None:
            raise errors.not_found(rtype, name)
        return obj

    def _check_namespace(self, rtype: ResourceType, namespace: str | None,
                         meta: dict[str, Any]) -> str | None:
        if not rtype.namespaced:
            meta.pop("namespace", None)
            return None
        body_ns = meta.get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise errors.bad_request("the namespace of the provided object does not match "
                                     "the namespace sent on the request")
        namespace = namespace or body_ns
        if not namespace:
            raise errors.bad_request(f"{rtype} is namespaced: a namespace is required")
        meta["namespace"] = namespace
        if self._require_namespaces:
            ns_obj = self._objects[("", "namespaces")].get((None, namespace))
            if ns_obj is None:
                raise errors.namespace_not_found(namespace)
            if meta_of(ns_obj).get("deletionTimestamp"):
                raise errors.api_error(403, "Forbidden", f"unable to create new content in "
                                       f"namespace {namespace} because it is being terminated")
        return str(namespace)

    def _generate_name(self, rtype: ResourceType, namespace: str | None, prefix: str) -> str:
        for _ in range(100):
            name = prefix + "".join(self._random.choice(_NAME_CHARS) for _ in range(5))
            if (namespace, name) not in self._objects[rtype.key]:
                return name
        raise errors.already_exists(rtype, prefix + "*")

    def _admit(self, rtype: ResourceType, obj: Obj, old: Obj | None) -> Obj:
        """Validate and default an object on its way in (the admission chain)."""
        return rules.admit(rtype, obj, old, registry=self.registry, now=self._clock())

    def _update(self, rtype: ResourceType, namespace: str | None, name: str, new: Obj,
                subresource: str | None) -> Obj:
        namespace = namespace if rtype.namespaced else None
        old = self._require(rtype, namespace, name)
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request(f"metadata of {rtype} {name!r} must be an object")
        if meta.get("name", name) != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match "
                                     f"the name on the URL ({name})")
        if rtype.namespaced and meta.get("namespace", namespace) != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the "
                                     "namespace sent on the request")
        rv = meta.get("resourceVersion")
        if rv and rv != meta_of(old)["resourceVersion"]:
            raise errors.conflict(rtype, name)
        if subresource == "status" and rtype.has_status:
            status = new.get("status")
            new = clone(old)
            new.pop("status", None)
            if status is not None:
                new["status"] = status
        elif subresource is not None:
            raise errors.page_not_found(f"{rtype} {name}/{subresource}")
        elif rtype.has_status:
            new.pop("status", None)
            if "status" in old:
                new["status"] = clone(old["status"])
        meta = new["metadata"]
        for field in _IMMUTABLE_META:
            if field in meta_of(old):
                meta[field] = clone(meta_of(old)[field])
            else:
                meta.pop(field, None)
        meta["resourceVersion"] = meta_of(old)["resourceVersion"]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        new = self._admit(rtype, new, old)
        if _payload(new, rtype) != _payload(old, rtype):
            meta = new["metadata"]
            meta["generation"] = int(meta_of(old).get("generation", 1)) + 1
        if new == old:
            return self._out(rtype, old)  # a no-op write keeps the resourceVersion
        stored = self._commit(rtype, namespace, name, new, old)
        if self._foreground:  # a dependent that let go of its owner may unblock its deletion
            for ref in meta_of(old).get("ownerReferences") or []:
                if not deletion.owned_by(stored, str(ref.get("uid") or ""), blocking=True):
                    self._settle_foreground(str(ref.get("uid") or ""))
        current = self._objects[rtype.key].get((namespace, name))
        if current is None:
            return self._out(rtype, stored)
        if meta_of(current).get("deletionTimestamp") and self._ready_to_go(rtype, current):
            return self._out(rtype, self._finally_delete(rtype, namespace, name, "Background"))
        return self._out(rtype, current)

    def _commit(self, rtype: ResourceType, namespace: str | None, name: str, obj: Obj,
                old: Obj | None) -> Obj:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        self._objects[rtype.key][(namespace, name)] = obj
        if rtype.key == (CRD_GROUP, "customresourcedefinitions"):
            self.registry.register_crd(obj)
        self._emit("ADDED" if old is None else "MODIFIED", rtype, namespace, obj, old)
        return obj

    def _delete(self, rtype: ResourceType, namespace: str | None, name: str,
                propagation: str, grace: int | None = None) -> Obj:
        namespace = namespace if rtype.namespaced else None
        obj = self._require(rtype, namespace, name)
        meta = meta_of(obj)
        period = deletion.grace_period(rtype.key, obj, grace)
        if meta.get("deletionTimestamp"):
            return self._shorten_grace(rtype, namespace, name, obj, period)
        is_namespace = rtype.key == ("", "namespaces")
        gc_finalizer = deletion.GC_FINALIZERS.get(propagation)
        if period == 0 and gc_finalizer is None and not meta.get("finalizers") \
                and not is_namespace:
            return self._finally_delete(rtype, namespace, name, propagation)
        new = clone(obj)
        when = self._clock() + datetime.timedelta(seconds=period)
        new["metadata"].update(deletionTimestamp=timestamp(when),
                               deletionGracePeriodSeconds=period)
        if gc_finalizer is not None and gc_finalizer not in (meta.get("finalizers") or []):
            new["metadata"]["finalizers"] = [*(meta.get("finalizers") or []), gc_finalizer]
        if is_namespace:
            new.setdefault("status", {})["phase"] = "Terminating"
        obj = self._commit(rtype, namespace, name, new, obj)
        uid = str(meta.get("uid") or "")
        if is_namespace:
            self._delete_contents(name)
        elif propagation == deletion.ORPHAN:
            # The collector's work, done at once: dependents lose their owner reference,
            # then the orphan finalizer goes.
            self._orphan_dependents(uid)
            self._drop_finalizer(rtype, namespace, name, gc_finalizer or "")
        elif propagation == deletion.FOREGROUND:
            self._foreground[uid] = (rtype, namespace, name)
            self._delete_dependents(uid, foreground=True)
            self._settle_foreground(uid)
        current = self._objects[rtype.key].get((namespace, name))
        if current is None:
            return obj
        if self._ready_to_go(rtype, current):
            return self._finally_delete(rtype, namespace, name, propagation)
        return current

    def _shorten_grace(self, rtype: ResourceType, namespace: str | None, name: str, obj: Obj,
                       period: int) -> Obj:
        """Delete an object already being deleted: a pod's grace period may only shrink."""
        meta = meta_of(obj)
        if rtype.key == ("", "pods") and period < int(meta.get("deletionGracePeriodSeconds")
                                                      or 0):
            new = clone(obj)
            when = self._clock() + datetime.timedelta(seconds=period)
            new["metadata"].update(deletionTimestamp=timestamp(when),
                                   deletionGracePeriodSeconds=period)
            obj = self._commit(rtype, namespace, name, new, obj)
        if self._ready_to_go(rtype, obj):
            return self._finally_delete(rtype, namespace, name, deletion.BACKGROUND)
        return obj

    def _ready_to_go(self, rtype: ResourceType, obj: Obj) -> bool:
        meta = meta_of(obj)
        if meta.get("finalizers"):
            return False
        if int(meta.get("deletionGracePeriodSeconds") or 0) > 0:
            return False  # a pod in its grace period: the kubelet removes it
        if rtype.key == ("", "namespaces"):
            name = meta["name"]
            return not any(ns == name for bucket in self._objects.values() for ns, _ in bucket)
        return True

    def _finally_delete(self, rtype: ResourceType, namespace: str | None, name: str,
                        propagation: str) -> Obj:
        obj = self._objects[rtype.key].pop((namespace, name))
        self._rv += 1
        gone: Obj = clone(obj)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._emit("DELETED", rtype, namespace, gone, obj, rv=self._rv)
        if rtype.key == (CRD_GROUP, "customresourcedefinitions"):
            served = self.registry.unregister_crd(name)
            if served:  # all versions share one bucket: drop the custom objects once
                for (ns, child) in list(self._objects[served[0].key]):
                    self._finally_delete(served[0], ns, child, "Background")
        if propagation != deletion.ORPHAN:
            self._delete_dependents(meta_of(obj).get("uid"))
        for ref in meta_of(obj).get("ownerReferences") or []:
            self._settle_foreground(str(ref.get("uid") or ""))
        if namespace is not None:
            ns_obj = self._objects[("", "namespaces")].get((None, namespace))
            ns_type = self.registry.get("", "v1", "namespaces")
            if ns_obj is not None and ns_type is not None and \
                    meta_of(ns_obj).get("deletionTimestamp") and self._ready_to_go(ns_type, ns_obj):
                self._finally_delete(ns_type, None, namespace, "Background")
        return gone

    def _delete_contents(self, namespace: str) -> None:
        for rtype in self._served_types():
            for (ns, name) in list(self._objects.get(rtype.key, {})):
                if ns == namespace and (ns, name) in self._objects[rtype.key]:
                    self._delete(rtype, ns, name, "Background")

    def _dependents(self, uid: str) -> list[tuple[ResourceType, str | None, str, Obj]]:
        found = []
        for rtype in self._served_types():
            for (ns, name), obj in list(self._objects.get(rtype.key, {}).items()):
                if deletion.owned_by(obj, uid):
                    found.append((rtype, ns, name, obj))
        return found

    def _delete_dependents(self, uid: str | None, *, foreground: bool = False) -> None:
        """Delete what ``uid`` owns: blocking dependents of a foreground deletion are
        themselves deleted in the foreground, the others in the background."""
        if not uid:
            return
        for rtype, ns, name, obj in self._dependents(uid):
            if (ns, name) in self._objects[rtype.key]:
                blocking = foreground and deletion.owned_by(obj, uid, blocking=True)
                self._delete(rtype, ns, name,
                             deletion.FOREGROUND if blocking else deletion.BACKGROUND)

    def _orphan_dependents(self, uid: str) -> None:
        for rtype, ns, name, obj in self._dependents(uid):
            new = clone(obj)
            deletion.without_owner(new, uid)
            self._commit(rtype, ns, name, new, obj)

    def _drop_finalizer(self, rtype: ResourceType, namespace: str | None, name: str,
                        finalizer: str) -> None:
        obj = self._objects[rtype.key].get((namespace, name))
        if obj is None or finalizer not in (meta_of(obj).get("finalizers") or []):
            return
        new = clone(obj)
        rest = [f for f in new["metadata"]["finalizers"] if f != finalizer]
        if rest:
            new["metadata"]["finalizers"] = rest
        else:
            del new["metadata"]["finalizers"]
        self._commit(rtype, namespace, name, new, obj)

    def _settle_foreground(self, uid: str) -> None:
        """Finish a foreground deletion once no dependent blocking its owner is left."""
        waiting = self._foreground.get(uid)
        if waiting is None:
            return
        rtype, namespace, name = waiting
        obj = self._objects[rtype.key].get((namespace, name))
        if obj is None or meta_of(obj).get("uid") != uid:
            del self._foreground[uid]
            return
        if any(deletion.owned_by(o, uid, blocking=True)
               for bucket in self._objects.values() for o in bucket.values()):
            return
        del self._foreground[uid]
        self._drop_finalizer(rtype, namespace, name, deletion.GC_FINALIZERS[deletion.FOREGROUND])
        obj = self._objects[rtype.key][(namespace, name)]
        if self._ready_to_go(rtype, obj):
            self._finally_delete(rtype, namespace, name, deletion.BACKGROUND)

    def _served_types(self) -> list[ResourceType]:
        seen: dict[tuple[str, str], ResourceType] = {}
        for rtype in self.registry.all():
            seen.setdefault(rtype.key, rtype)
        return list(seen.values())

    def _emit(self, kind: str, rtype: ResourceType, namespace: str | None, obj: Obj,
              prev: Obj | None, rv: int | None = None) -> None:
        event = Event(rv or self._rv, kind, rtype.key, namespace, obj, prev)
        self._log.append(event)
        for key, ns, callback in list(self._subscribers.values()):
            if key == rtype.key and (ns is None or ns == namespace):
                callback(event)


def _order(item: tuple[ObjKey, Obj]) -> tuple[str, str]:
    (namespace, name), _ = item
    return (namespace or "", name)
