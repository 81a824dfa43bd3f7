"""The Lua scripts that set malformed records aside (module :mod:`queueing.store.quarantine`).

Both write the reason into the quarantine hash in the same atomic step as the change, so a
record is never gone without a word. The hash is capped: a flood of garbage cannot grow it
without bound (the records are still set aside, only no longer each named).
"""

from __future__ import annotations

from typing import Final

#: How many records the quarantine hash names at most.
QUARANTINE_KEPT: Final = 1000

NOTE_QUARANTINED: Final = rf"""
-- Name a record set aside: KEYS[3] the quarantine hash, KEYS[4] where a quarantine hash of
-- the wrong type is moved (it must not stop the naming of the others).
local function note_quarantined(what, reason)
  local t = redis.call("TYPE", KEYS[3]).ok
  if t ~= "none" and t ~= "hash" then
    redis.call("RENAME", KEYS[3], KEYS[4])
    redis.call("HSET", KEYS[3], KEYS[3], "a " .. t .. ", not a hash: moved to " .. KEYS[4])
  end
  if redis.call("HEXISTS", KEYS[3], what) == 1
      or redis.call("HLEN", KEYS[3]) < {QUARANTINE_KEPT} then
    redis.call("HSET", KEYS[3], what, reason)
  end
end
"""

SET_ASIDE: Final = NOTE_QUARANTINED + r"""
-- A key of the wrong Redis type is moved out of the way (KEYS[2]), so that every reader
-- and script of the store goes on without it, and named in the quarantine hash.
-- KEYS[1] the key  KEYS[2] where it goes  KEYS[3] quarantine hash  KEYS[4] (see above)
-- ARGV[1] the type it should have ("integer": a string holding a whole number)
local t = redis.call("TYPE", KEYS[1]).ok
if t == "none" or t == ARGV[1] then return "ok" end
local found = "a " .. t
if ARGV[1] == "integer" and t == "string" then
  local value = redis.call("GET", KEYS[1])
  if string.match(value, "^%d+$") and #value <= 15 then return "ok" end
  found = "the string " .. string.sub(value, 1, 40)
end
redis.call("RENAME", KEYS[1], KEYS[2])
note_quarantined(KEYS[1], found .. ", not a " .. ARGV[1] .. ": moved to " .. KEYS[2])
return "moved"
"""

DROP_MEMBER: Final = NOTE_QUARANTINED + r"""
-- A member of a set that does not parse (a node's pods set holding what is not a pod id)
-- is taken out of the set and named.
-- KEYS[1] the set  KEYS[2] (unused)  KEYS[3] quarantine hash  KEYS[4] (see above)
-- ARGV[1] the member  ARGV[2] why
if redis.call("TYPE", KEYS[1]).ok ~= "set" then return "missing" end
if redis.call("SREM", KEYS[1], ARGV[1]) == 0 then return "missing" end
note_quarantined(KEYS[1] .. " " .. ARGV[1], ARGV[2] .. ": removed from the set")
return "ok"
"""

NOTE: Final = NOTE_QUARANTINED + r"""
-- Name a record that readers skip (a field of a hash that does not parse), or, with an
-- empty reason, forget one that reads well again.
-- KEYS[1], KEYS[2] (unused)  KEYS[3] quarantine hash  KEYS[4] (see above)
-- ARGV[1] what  ARGV[2] why, or ""
if ARGV[2] == "" then
  if redis.call("TYPE", KEYS[3]).ok == "hash" then redis.call("HDEL", KEYS[3], ARGV[1]) end
  return "ok"
end
note_quarantined(ARGV[1], ARGV[2])
return "ok"
"""
