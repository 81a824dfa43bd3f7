"""Malformed records: set aside with a reason, named, and never in anyone's way.

Anyone who can write to the pool's Redis can write anything under its prefix: a key of
the wrong type (a string where a hash belongs), a truncated manifest, a namespace's
labels that are not JSON, a member of a node's pods set that is no pod id. One such
record once stopped every admission, killed a worker's pod thread or made the CLI crash
(issue 42). Every reader now reads defensively, and a record that does not parse is
*quarantined*:

* it is named in the hash ``P:quarantine`` — the record (a key, or ``key field`` for one
  field of a hash or one member of a set) -> why — which ``kuota status`` lists;
* a key of the wrong Redis type is moved to ``P:quarantined:<key>`` (kept for a human
  to look at), so the scripts and readers that expect the right type go on without it;
  the scheduler does this when Redis answers ``WRONGTYPE`` (:meth:`Quarantine.repair`);
* a member of a set that does not parse is taken out of the set (:meth:`drop_member`);
* a field of a hash that does not parse (a queue object, a namespace's labels) stays
  where it is — skipped by every reader, named until it is written again in good form.

Only processes with the pool's own Redis user write here (the scheduler, the workers);
read-only readers (``kuota status``, the dashboard, a submitter) skip what does not
parse and name it in their own output (:meth:`wrong_types` finds keys of the wrong type
without moving them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from queueing.store.keys import Keys, PodRef
from queueing.store.objects import KINDS
from queueing.store.scripts import Scripts

#: Redis types by what the store keeps in them.
HASH: Final = "hash"
SET: Final = "set"
ZSET: Final = "zset"
STREAM: Final = "stream"
STRING: Final = "string"
LIST: Final = "list"
#: A string holding a whole number (a counter INCR must be able to count on).
INTEGER: Final = "integer"


class Quarantine:
    def __init__(self, redis: Any, keys: Keys, scripts: Scripts) -> None:
        self._r = redis
        self._keys = keys
        self._scripts = scripts

    # -- naming ------------------------------------------------------------------
    def note(self, what: str, reason: str) -> None:
        """Name a record readers skip; idempotent."""
        self._run("note", "", [what, reason])

    def clear(self, what: str) -> None:
        """Forget a record that reads well again."""
        self._run("note", "", [what, ""])

    def sync(self, scope: str | tuple[str, ...], found: Mapping[str, str]) -> None:
        """Make the entries whose name starts with ``scope`` (one or several) exactly
        ``found``: what a reader of whole hashes (the queue objects) finds wrong now."""
        named = self.all()
        for what in named.keys() - found.keys():
            if what.startswith(scope):
                self.clear(what)
        for what, reason in found.items():
            if named.get(what) != reason:
                self.note(what, reason)

    def all(self) -> dict[str, str]:
        """Every record set aside -> why (empty when the hash is itself unreadable: the
        next :meth:`repair` moves it aside)."""
        key = self._keys.quarantine
        if self._r.type(key) != HASH:
            return {}
        return dict(sorted(self._r.hgetall(key).items()))

    # -- setting aside -----------------------------------------------------------
    def drop_member(self, set_key: str, member: str, reason: str) -> None:
        """Take a member that does not parse out of ``set_key`` and name it."""
        self._run("drop_member", set_key, [member, reason])

    def set_aside(self, key: str, wanted: str) -> bool:
        """Move ``key`` aside if it holds another type than ``wanted``; True if it did."""
        return self._run("set_aside", key, [wanted]) == "moved"

    def wrong_types(self, *, workloads: bool = True) -> dict[str, str]:
        """Keys of the store that hold another Redis type than the store writes there ->
        what each holds instead, in words (read only; see :meth:`_wrong_types`)."""
        return {key: f"a {found}, not a {wanted}"
                for key, (found, wanted) in self._wrong_types(workloads=workloads).items()}

    def _wrong_types(self, *, workloads: bool = True) -> dict[str, tuple[str, str]]:
        """key -> (the type it holds, the type it should hold); one round trip for the
        store's fixed keys, a few for those they name (``workloads``: with each unfinished
        workload's record and history, and the pods on the nodes)."""
        wrong: dict[str, tuple[str, str]] = {}
        present = self._expected(self._fixed(), wrong)
        self._expected(self._derived(present, workloads=workloads), wrong)
        for counter in (self._keys.config_generation, self._keys.fence):
            if present.get(counter) == STRING and not _whole(self._r.get(counter)):
                wrong[counter] = ("string that is no whole number", INTEGER)
        return wrong

    def repair(self, *, workloads: bool = True) -> dict[str, str]:
        """Move every key of the wrong type aside (``P:quarantined:<key>``), naming each;
        returns the keys moved -> why. What the scheduler does when a step fails (then it
        rebuilds, without them), and at every node check without ``workloads`` (the
        keys no step may read for a while: a namespace's streams, the counters)."""
        moved: dict[str, str] = {}
        for _ in range(2):  # keys found through others (a node's) once those are right
            wrong = self._wrong_types(workloads=workloads)
            if not wrong:
                break
            for key, (found, wanted) in wrong.items():
                if key in (self._keys.lease, self._keys.fence):
                    continue  # set aside by the next taking of the lease (module lease)
                if self.set_aside(key, wanted):
                    moved[key] = f"a {found}, not a {wanted}"
        self._reindex(moved)
        return moved

    def _reindex(self, moved: Mapping[str, str]) -> None:
        """An index moved aside lost the workloads it listed: unmark it as complete, so
        that the next scheduler to lead lists them again from ``P:workloads``."""
        k = self._keys
        if moved.keys() & {k.unfinished, k.finished}:
            self._r.delete(k.unfinished_marker)
        if any(key.startswith(k.workloads_in("")) for key in moved):
            self._r.delete(k.namespace_index_marker)

    def _expected(self, wanted: Mapping[str, str],
                  wrong: dict[str, tuple[str, str]]) -> dict[str, str]:
        """The keys of ``wanted`` (key -> type) that hold what they should or nothing;
        those holding another type are added to ``wrong`` as key -> (found, wanted)."""
        keys = list(wanted)
        pipe = self._r.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        good: dict[str, str] = {}
        for key, found in zip(keys, pipe.execute(), strict=True):
            if found in ("none", wanted[key]):
                good[key] = found
            else:
                wrong[key] = (found, wanted[key])
        return good

    def _fixed(self) -> dict[str, str]:
        k = self._keys
        fixed = {k.objects(kind): HASH for kind in KINDS}
        fixed.update({k.namespaces: HASH, k.config_generation: STRING, k.workloads: ZSET,
                      k.unfinished: ZSET, k.finished: ZSET, k.unfinished_marker: STRING,
                      k.namespace_index_marker: STRING, k.nodes: SET, k.events: STREAM,
                      k.lease: STRING, k.fence: STRING, k.schedulers: HASH,
                      k.quarantine: HASH})
        return fixed

    def _derived(self, present: Mapping[str, str], *, workloads: bool) -> dict[str, str]:
        """The keys named by the fixed ones that hold the right type: each node's record
        and pods set; each namespace's streams and indexes; with ``workloads``, each
        unfinished workload's record and history, and the pods in the nodes' sets."""
        k = self._keys
        derived: dict[str, str] = {}
        if present.get(k.nodes) == SET:
            for node in self._r.smembers(k.nodes):
                derived[k.node(node)] = HASH
                derived[k.node_pods(node)] = SET
        if present.get(k.objects("LocalQueue")) == HASH:
            for namespace in {name.partition("/")[0] for name in
                              self._r.hkeys(k.objects("LocalQueue"))}:
                derived.update({k.requests(namespace): STREAM, k.answers(namespace): ZSET,
                                k.workloads_in(namespace): ZSET, k.purged(namespace): ZSET})
        if not workloads:
            return derived
        if present.get(k.unfinished) == ZSET:
            for key in self._r.zrange(k.unfinished, 0, -1):
                derived[k.workload(key)] = HASH
                derived[k.history(key)] = LIST
        derived.update({key: HASH for key in self._pod_keys(derived)})
        return derived

    def _pod_keys(self, derived: Mapping[str, str]) -> list[str]:
        """The pods in the nodes' pods sets (a set of the wrong type is not read)."""
        sets = [key for key, kind in derived.items() if kind == SET]
        pipe = self._r.pipeline(transaction=False)
        for key in sets:
            pipe.smembers(key)
        refs = [PodRef.parse_or_none(str(member))
                for members in pipe.execute(raise_on_error=False)
                if not isinstance(members, Exception) for member in members]
        return [self._keys.pod(ref) for ref in refs if ref is not None]

    def _run(self, script: str, key: str, args: list[str]) -> str:
        k = self._keys
        return self._scripts.run(script, [key or k.quarantine, k.quarantined(key or "-"),
                                          k.quarantine, k.quarantined(k.quarantine)], args)


def _whole(value: object) -> bool:
    """Is ``value`` a counter INCR can count on (as the scripts check it)?"""
    return isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 15
