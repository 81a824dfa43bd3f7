"""Queue objects in Redis: ResourceFlavors, Topologies, AdmissionChecks, Cohorts,
ClusterQueues, LocalQueues, WorkloadPriorityClasses, MultiClusterConfigs, MemberClusters
(pool members) and namespace labels, stored as the manifests users apply.

Objects are kept in their manifest form (checked by :mod:`quota.api` before
they get here), one hash per kind, so the scheduler rebuilds its configs with
the same parser ``kuota validate`` uses. Every change is one MULTI/EXEC
transaction that also bumps the config generation and posts a ``config``
event: the scheduler never sees half of an apply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from queueing.store.errors import NotFound
from queueing.store.events import EVENTS_MAXLEN
from queueing.store.keys import Keys

#: Kinds the store keeps, in the order a scheduler applies them.
KINDS: Final = ("ResourceFlavor", "Topology", "AdmissionCheck", "Cohort", "ClusterQueue",
                "LocalQueue", "WorkloadPriorityClass", "MultiClusterConfig", "MemberCluster")
#: Namespaced kinds are stored as ``namespace/name``.
NAMESPACED: Final = frozenset({"LocalQueue"})


def object_name(kind: str, manifest: Mapping[str, Any]) -> str:
    meta = manifest.get("metadata") or {}
    name = str(meta.get("name", ""))
    if kind in NAMESPACED:
        return f"{meta.get('namespace') or 'default'}/{name}"
    return name


class ObjectStore:
    def __init__(self, redis: Any, keys: Keys) -> None:
        self._r = redis
        self._keys = keys

    def apply(self, manifests: Iterable[Mapping[str, Any]],
              namespaces: Mapping[str, Mapping[str, str]] | None = None) -> list[str]:
        """Store checked manifests (and namespace labels) at once; returns ``Kind/name`` each."""
        applied: list[str] = []
        pipe = self._r.pipeline(transaction=True)
        for manifest in manifests:
            kind = str(manifest.get("kind"))
            if kind not in KINDS:
                raise ValueError(f"{kind} objects cannot be applied to the store "
                                 f"(expected one of {', '.join(KINDS)})")
            name = object_name(kind, manifest)
            pipe.hset(self._keys.objects(kind), name,
                      json.dumps(dict(manifest), sort_keys=True, separators=(",", ":")))
            applied.append(f"{kind}/{name}")
        for name, labels in (namespaces or {}).items():
            pipe.hset(self._keys.namespaces, name, json.dumps(dict(labels), sort_keys=True))
            applied.append(f"Namespace/{name}")
        self._bump(pipe)
        pipe.execute()
        return applied

    def delete(self, kind: str, name: str) -> None:
        """Remove one object; raises :class:`NotFound` when it is not there."""
        key = self._keys.namespaces if kind == "Namespace" else self._keys.objects(kind)
        if kind != "Namespace" and kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r} (expected Namespace or one of "
                             f"{', '.join(KINDS)})")
        pipe = self._r.pipeline(transaction=True)
        pipe.hdel(key, name)
        self._bump(pipe)
        removed = pipe.execute()[0]
        if not removed:
            raise NotFound(f"{kind} {name}: not found")

    def manifests(self, kind: str,
                  problems: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
        """The stored manifests of ``kind`` that are JSON objects, by name; the others
        (written around kuota) are left out and named in ``problems``
        (:meth:`problem_name` -> why)."""
        out: dict[str, dict[str, Any]] = {}
        for name, text in self.texts(kind).items():
            manifest = self._object(self._keys.objects(kind), name, text, problems)
            if manifest is not None:
                out[name] = manifest
        return out

    def texts(self, kind: str) -> dict[str, str]:
        """The stored manifests of ``kind`` as their JSON text, by name (sorted)."""
        raw: dict[str, str] = self._r.hgetall(self._keys.objects(kind))
        return dict(sorted(raw.items()))

    def namespaces(self, problems: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
        """Each namespace's labels; labels that are not a JSON object of strings (written
        around kuota) are left out and named in ``problems``."""
        raw: dict[str, str] = self._r.hgetall(self._keys.namespaces)
        out: dict[str, dict[str, str]] = {}
        for name, text in sorted(raw.items()):
            labels = self._object(self._keys.namespaces, name, text, problems)
            if labels is None:
                continue
            if not all(isinstance(v, str) for v in labels.values()):
                _note(problems, self._keys.namespaces, name, "labels must be strings")
                continue
            out[name] = labels
        return out

    @staticmethod
    def _object(key: str, name: str, text: str,
                problems: dict[str, str] | None) -> dict[str, Any] | None:
        """``text`` as a JSON object, or None (the problem noted)."""
        try:
            value = json.loads(text)
        except RecursionError:
            _note(problems, key, name, "not JSON: nested too deeply")
            return None
        except ValueError as exc:
            _note(problems, key, name, f"not JSON: {exc}")
            return None
        if not isinstance(value, dict):
            _note(problems, key, name, f"a JSON {type(value).__name__}, not an object")
            return None
        return value

    def generation(self) -> int:
        """The config generation; -1 while the counter holds no whole number (written
        around kuota: the scheduler sets it aside, and applies count again from 1)."""
        text = self._r.get(self._keys.config_generation) or "0"
        return int(text) if text.isascii() and text.isdigit() else -1

    def _bump(self, pipe: Any) -> None:
        pipe.incr(self._keys.config_generation)
        pipe.xadd(self._keys.events, {"kind": "config"}, maxlen=EVENTS_MAXLEN, approximate=True)


def problem_name(key: str, field: str) -> str:
    """How a malformed field of a stored hash is named (in the quarantine hash too)."""
    return f"{key} {field}"


def _note(problems: dict[str, str] | None, key: str, field: str, why: str) -> None:
    if problems is not None:
        problems[problem_name(key, field)] = f"{field}: {why}"
