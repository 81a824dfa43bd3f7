"""Read a Redis store again and again, cheaply: only what changed is fetched and parsed.

:func:`kuota.service.rebuild.load` reads and checks every unfinished workload's
spec — right for a scheduler taking over once, far too slow to repeat every
second over 50,000 pending workloads (about 20 s on a busy 2-core machine, most
of it parsing specs). The dashboard reads the same things, as the same
values, but keeps what it read:

1. **A fingerprint of every unfinished workload, in one reply.** A read-only
   Lua script (``EVAL_RO``; Redis forbids it any write) walks the index of
   unfinished workloads (:attr:`~queueing.store.keys.Keys.unfinished`; every
   workload, in a store whose index an older kuota left incomplete) in chunks
   and returns one line per workload: its key and the fields that
   change as it moves (state, attempt, submission, queue time, admission time,
   reason, message, placement, outcome, counts). Parsing that text is a few
   milliseconds.
2. **Full records only for new or changed lines**, without their spec.
3. **Specs only for new submissions**: a workload's spec never changes once
   submitted (a re-submission gets a new submission id), so its checked
   :class:`~quota.workload.WorkloadInfo` is kept by submission id.
4. **Queue objects only when the store's config generation moved** (every
   ``kuota apply`` and ``kuota delete`` bumps it with its write).

The first read builds the engine exactly as ``rebuild.load`` builds one
(:func:`kuota.service.rebuild.new_engine`, then :func:`kuota.service.rebuild.add`
for each unfinished workload) — the engine a new leader would have. Later
reads change it only where the store changed: a workload whose state, place in
line or admission changed is taken out (finished and forgotten) and added again
from its new record, as ``rebuild.add`` would add it; one whose reason or
placement alone changed only gets new facts. A change to the queue objects
rebuilds the engine from scratch. When nothing changed, the last result is
returned as it is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Final

import redis

from admission.engine import Engine
from kuota import explanation
from kuota.dashboard.model import Facts
from kuota.service import rebuild
from queueing.store import Store, WorkloadRecord
from quota.config import EngineConfig
from quota.lifecycle import State
from quota.workload import WorkloadInfo

#: Workloads fingerprinted per script call: Redis runs a script alone, so keep each short.
CHUNK: Final = 5000
#: Fields whose change means a workload must be read again: the first
#: :data:`ENGINE_FIELDS` change what the engine holds (its state, place in line,
#: admission), the rest only what is said about it.
WATCHED: Final = ("state", "attempt", "submission", "queued_at", "admitted_at", "priority",
                  "cq", "origin", "after", "outcome", "placement", "pods", "pods_done", "failures",
                  "reason", "message")
ENGINE_FIELDS: Final = 9
_SEP = "\x1f"  # between fields; never in a key, and a control character no writer uses

#: Finished workloads have no line: the engine never holds them (as in ``rebuild.load``),
#: and a pool retains a week of them — hundreds of thousands of lines a second to send
#: and parse for nothing. One that finishes thus reads as gone, and leaves the engine.
FINGERPRINTS: Final = """
local out = {}
local prefix = ARGV[1]
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[3])) do
  if redis.call('HGET', prefix .. key, 'state') ~= 'Finished' then
    local h = redis.call('HMGET', prefix .. key, unpack(ARGV, 4))
    local line = {key}
    for i = 1, #h do
      local v = h[i]
      if not v then v = '' end
      line[i + 1] = v
    end
    out[#out + 1] = table.concat(line, '\\31')
  end
end
return table.concat(out, '\\30')
"""


@dataclass
class Loaded:
    engine: Engine
    facts: dict[str, Facts]
    #: Why objects or workloads were left out.
    problems: list[str]
    #: ClusterQueues whose waiting workloads (or what is said of them) changed since the
    #: previous result; None: it may be any.
    changed: set[str] | None = None


@dataclass
class RedisReader:
    store: Store
    _fingerprints: dict[str, str] = field(default_factory=dict)
    _records: dict[str, WorkloadRecord] = field(default_factory=dict)
    #: submission id -> the checked request, or why it cannot be read.
    _infos: dict[str, WorkloadInfo | str] = field(default_factory=dict)
    _generation: int | None = None
    _configs: rebuild.Configs | None = None
    _last: Loaded | None = None
    _engine: Engine | None = None
    _facts: dict[str, Facts] = field(default_factory=dict)
    #: Unfinished workloads left out of the engine -> why.
    _invalid: dict[str, str] = field(default_factory=dict)
    #: False once the server refused EVAL_RO (Redis < 7, fakeredis): plain EVAL then.
    _read_only_eval: bool = True

    def load(self) -> Loaded:
        configs_changed = self._read_configs()
        moved, said = self._read_workloads()
        if self._last is not None and not configs_changed and not moved and not said:
            return self._last
        changed: set[str] | None = None
        if configs_changed or self._engine is None:
            self._build()
        else:
            changed = self._queues_of(moved | said)
            self._update(moved, said)
            changed |= self._queues_of(moved | said)
        assert self._engine is not None and self._configs is not None
        problems = [f"{name}: {text}" for name, text in sorted(self._configs.problems.items())]
        problems += [f"workload {key} is set aside: {text}"
                     for key, text in sorted(self._invalid.items())]
        self._last = Loaded(self._engine, self._facts, problems, changed)
        return self._last

    def _queues_of(self, keys: set[str]) -> set[str]:
        """The ClusterQueues these workloads wait in (through their LocalQueues)."""
        assert self._engine is not None
        local = self._engine.cache.local_queues
        out = set()
        for key in keys:
            waiting = self._engine.queues.cluster_queue_of(key)
            if waiting is not None:
                out.add(waiting)
            record = self._records.get(key)
            if record is not None and record.queue in local:
                out.add(local[record.queue].cluster_queue)
        return out

    # -- queue objects --------------------------------------------------------------------
    def _read_configs(self) -> bool:
        # Every apply and delete bumps the generation in the same transaction.
        generation = self.store.objects.generation()
        if generation == self._generation and self._configs is not None:
            return False
        self._generation = generation
        self._configs = rebuild.load_configs(  # (parsing only the objects changed)
            self.store, self._configs.parsed if self._configs is not None else None)
        return True

    # -- workloads ------------------------------------------------------------------------
    def _read_workloads(self) -> tuple[set[str], set[str]]:
        """Re-read what changed: (keys whose engine part changed or that are gone, keys
        whose reason, message or placement alone changed)."""
        seen = self.fingerprints()
        old = self._fingerprints
        moved = {key for key, line in seen.items()
                 if _engine_part(old.get(key)) != _engine_part(line)}
        said = {key for key, line in seen.items() if key not in moved and old[key] != line}
        gone = old.keys() - seen.keys()
        if not moved and not said and not gone:
            return set(), set()
        for key in gone:
            self._records.pop(key, None)
        fresh = self.store.workloads.get_many(moved | said, spec=False)
        self._records.update(fresh)
        for key in (moved | said) - fresh.keys():
            # Deleted between the two reads: gone now; the next read settles it.
            seen.pop(key, None)
            self._records.pop(key, None)
        self._fingerprints = seen
        self._read_specs()
        return moved | gone, said & fresh.keys()

    def fingerprints(self) -> dict[str, str]:
        # The unfinished index once it is complete: a pool retains a week of finished
        # workloads, which the walk would otherwise go through every second.
        index = self.store.indexes.unfinished_index()
        prefix = self.store.keys.workload("")
        total = self.store.redis.zcard(index)
        out: dict[str, str] = {}
        for start in range(0, total, CHUNK):
            text = self._eval(FINGERPRINTS, index, prefix, start, start + CHUNK - 1)
            for line in filter(None, str(text or "").split("\x1e")):
                key, _, rest = line.partition(_SEP)
                out[key] = rest
        return out

    def _eval(self, script: str, *args: Any) -> Any:
        r = self.store.redis
        if self._read_only_eval:
            try:
                return r.eval_ro(script, 1, args[0], *args[1:], *WATCHED)
            except redis.ResponseError as exc:
                if "unknown command" not in str(exc).lower():
                    raise
                self._read_only_eval = False
        return r.eval(script, 1, args[0], *args[1:], *WATCHED)

    def _read_specs(self) -> None:
        wanted = {r.submission or r.key: key for key, r in self._records.items()
                  if (r.submission or r.key) not in self._infos
                  and r.state not in rebuild.SET_ASIDE and not r.dispatched}
        if not wanted:
            return
        specs = self.store.workloads.specs(wanted.values())
        for submission, key in wanted.items():
            record = self._records[key]
            spec = specs.get(key, "")
            self._infos[submission] = rebuild.checked_info(_with_spec(record, spec))
        live = {r.submission or r.key for r in self._records.values()}
        for gone in self._infos.keys() - live:
            del self._infos[gone]

    # -- the engine -----------------------------------------------------------------------
    def _build(self) -> None:
        assert self._configs is not None
        self._engine = rebuild.new_engine(self._configs, EngineConfig())
        self._facts = {}
        self._invalid = {}
        for key in self._records:
            self._add(key)
        self._engine.drain_outbox()

    def _update(self, moved: set[str], said: set[str]) -> None:
        engine = self._engine
        assert engine is not None
        now = time.time()
        for key in moved:
            held = engine.records.get(key)
            if held is not None:
                if held.state is not State.FINISHED:
                    engine.finish(key, now)
                del engine.records[key]  # forgotten: added again below if still live
            self._facts.pop(key, None)
            self._invalid.pop(key, None)
            if key in self._records:
                self._add(key)
        for key in said:
            if key in self._facts:
                record = self._records[key]
                self._facts[key] = Facts(explanation.from_record(record), record.placement)
        engine.drain_outbox()

    def _add(self, key: str) -> None:
        """Enter one stored workload as ``rebuild.load`` does (unless finished or
        dispatched here by a manager)."""
        assert self._engine is not None
        record = self._records[key]
        if record.state in rebuild.SET_ASIDE or record.dispatched:
            return
        info = self._infos.get(record.submission or record.key)
        if info is None or isinstance(info, str):
            self._invalid[key] = info or "its spec could not be read"
            return
        # A spec is checked once; the priority and queue time are the record's, as in
        # rebuild.workload_info.
        try:
            rebuild.add(self._engine, record, _requeued(info, record))
        except ValueError as exc:
            self._invalid[key] = str(exc)
            return
        self._facts[key] = Facts(explanation.from_record(record), record.placement)


def _engine_part(line: str | None) -> list[str] | None:
    return None if line is None else line.split(_SEP)[:ENGINE_FIELDS]


def _with_spec(record: WorkloadRecord, spec: str) -> WorkloadRecord:
    return replace(record, spec_json=spec)


def _requeued(info: WorkloadInfo, record: WorkloadRecord) -> WorkloadInfo:
    if info.priority == record.priority and info.created == record.queued_at:
        return info
    return replace(info, priority=record.priority, created=record.queued_at)
