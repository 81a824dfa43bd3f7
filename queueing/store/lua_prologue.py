"""The prologue of the store's Lua scripts: the definitions they share, and how a
script gets the ones it uses.

**One lifecycle table.** The workload transitions are not re-typed in Lua: the
prologue holds a table rendered from :data:`quota.lifecycle.TRANSITIONS`, and
scripts move a workload only through ``step(state, event)``. Beside it are the helpers
scripts call: fencing, the clock, history notes, stream entries, the indexes.

**Only what a script uses.** Redis runs a script's whole text at every call, so each
definition costs every call that carries it: the whole prologue took 2.2 µs a call (an
``EVALSHA`` of it and ``return 'ok'``: 3.25 against 1.0 µs). A script carries the
definitions whose names it mentions, and those they mention (:func:`needed`); a name
mentioned only in a comment brings its definition in too, which costs a little time and
never a missing helper.
"""

from __future__ import annotations

import re
from typing import Final

from queueing.store.events import EVENTS_MAXLEN
from quota.lifecycle import HOLDS_QUOTA, TRANSITIONS


def _lifecycle_table() -> str:
    rows = ", ".join(f'["{state.value}|{event.value}"] = "{target.value}"'
                     for (state, event), target in sorted(TRANSITIONS.items()))
    holds = ", ".join(f'["{s.value}"] = true' for s in sorted(HOLDS_QUOTA))
    return f"local TRANSITIONS = {{{rows}}}\nlocal HOLDS_QUOTA = {{{holds}}}\n"


PROLOGUE: Final = _lifecycle_table() + f"local EVENTS_MAXLEN = {EVENTS_MAXLEN}\n" + r"""
local unpack = unpack or table.unpack
local function step(state, event)
  return TRANSITIONS[(state or "") .. "|" .. event]
end
local function fenced(lease_key, holder)
  return redis.call("GET", lease_key) ~= holder
end
local function redis_now()
  local t = redis.call("TIME")
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function note(history, entry)
  redis.call("RPUSH", history, cjson.encode(entry))
end
local function emit(stream, maxlen, ...)
  redis.call("XADD", stream, "MAXLEN", "~", maxlen, "*", ...)
end
-- The scheduler changed a workload: the leader skips these entries (it made the change);
-- standbys follow them to keep their copy of the store current (kuota.service.standby).
-- A call that decides for many workloads names them all in one entry, a line each
-- (``queueing.store.events.named``): a round of 1,000 admissions is one entry to write and read.
local decided_keys = {}
local function decided(stream, workload, key)
  emit(stream, EVENTS_MAXLEN, "kind", "decision", "key",
       key or redis.call("HGET", workload, "key"))
end
local function decided_later(workload, key)
  decided_keys[#decided_keys + 1] = key or redis.call("HGET", workload, "key")
end
local function emit_decided(stream)
  if #decided_keys > 0 then
    emit(stream, EVENTS_MAXLEN, "kind", "decision", "key", table.concat(decided_keys, "\n"))
  end
end
-- A workload just finished: out of the unfinished index, into the finished one (by when).
local function finished(unfinished, finished_index, key, at)
  redis.call("ZREM", unfinished, key)
  redis.call("ZADD", finished_index, at, key)
end
-- Ask every live pod among the keys from `first` on to stop (its worker terminates it);
-- true if there was one.
local function stop_pods(first)
  local live = false
  for i = first, #KEYS do
    local phase = redis.call("HGET", KEYS[i], "state")
    if phase == "Placed" or phase == "Running" then
      redis.call("HSET", KEYS[i], "stop", "1")
      live = true
    end
  end
  return live
end
"""


def _definitions(prologue: str) -> list[tuple[str, str]]:
    """The prologue's top-level definitions in order, each as (the name it defines, its
    text with the comment lines above it)."""
    chunks: list[list[str]] = []
    comment = False
    for line in prologue.splitlines(keepends=True):
        begins = line.startswith(("local ", "-- "))
        if not chunks or (begins and not comment):
            chunks.append([])
        chunks[-1].append(line)
        comment = line.startswith("-- ")
    out = []
    for lines in chunks:
        found = re.search(r"^local (?:function )?(\w+)", "".join(lines), re.MULTILINE)
        if found is None:
            raise ValueError(f"prologue: no definition in {''.join(lines)!r}")
        out.append((found.group(1), "".join(lines)))
    return out


DEFINITIONS: Final = _definitions(PROLOGUE)


def needed(body: str) -> str:
    """The definitions ``body`` mentions by name, and those they mention, in the prologue's
    order: what a script needs before its own text."""
    names: set[str] = set()
    texts = [body]
    while texts:
        text = texts.pop()
        for name, definition in DEFINITIONS:
            if name not in names and re.search(rf"\b{name}\b", text):
                names.add(name)
                texts.append(definition)
    return "".join(definition for name, definition in DEFINITIONS if name in names)
