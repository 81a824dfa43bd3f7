"""The Lua scripts of worker nodes and of the scheduler lease.

The conventions (status strings, fencing, the helpers of
:mod:`queueing.store.lua_prologue`) are those of :mod:`queueing.store.lua`, which lists
these scripts with the workloads' own.
"""

from __future__ import annotations

from typing import Final

from queueing.store.lua_quarantine import NOTE_QUARANTINED as _NOTE

#: What registering a node again and declaring it lost share: the pods of the node's
#: incarnation that is gone died with it.
_LOSE_PODS: Final = r"""
-- The node's pods set must hold exactly the pods the caller read (KEYS[5..], their ids
-- from ARGV[first_id] on): else false, and nothing is written (the caller reads it again).
-- Those still live are marked Lost at `now`; the set is emptied.
local function lose_pods(pods_set, first_id, now)
  if redis.call("SCARD", pods_set) ~= #KEYS - 4 then return false end
  for i = 5, #KEYS do
    if redis.call("SISMEMBER", pods_set, ARGV[first_id + i - 5]) == 0 then return false end
  end
  for i = 5, #KEYS do
    local phase = redis.call("HGET", KEYS[i], "state")
    if phase == "Placed" or phase == "Running" then
      redis.call("HSET", KEYS[i], "state", "Lost", "finished_at", now)
    end
  end
  redis.call("DEL", pods_set)
  return true
end
"""

REGISTER_NODE: Final = _LOSE_PODS + r"""
-- A worker (re)registers its node. Pods of an earlier incarnation died with it: mark them Lost.
-- A node whose worker still heartbeats (within 3 of its heartbeat intervals) is refused
-- ("live:<seconds since its heartbeat>") unless the caller replaces it: the new epoch then
-- fences the old worker, whose next heartbeat answers "replaced".
-- KEYS[1] nodes set  KEYS[2] node hash  KEYS[3] node pods set  KEYS[4] events
-- KEYS[5..] pod hashes of the node's pods set, as read
-- ARGV[1] node  ARGV[2] pool  ARGV[3] capacity JSON  ARGV[4] labels JSON  ARGV[5] devices JSON
-- ARGV[6] now  ARGV[7] events maxlen  ARGV[8] "1" to replace a live worker
-- ARGV[9] this worker's heartbeat interval (seconds)
-- ARGV[10] the longest a process of this worker runs on once the store no longer lists its
-- pod (seconds: stop check plus grace)  ARGV[11..] the pod ids, in KEYS order
local n = redis.call("HMGET", KEYS[2], "state", "heartbeat", "heartbeat_every")
if ARGV[8] ~= "1" and n[1] == "Ready" then
  local age = redis_now() - (tonumber(n[2]) or 0)
  if age < 3 * (tonumber(n[3]) or 5) then return "live:" .. string.format("%.1f", age) end
end
if not lose_pods(KEYS[3], 11, ARGV[6]) then return "stale" end
local epoch = redis.call("HINCRBY", KEYS[2], "epoch", 1)
redis.call("HSET", KEYS[2], "name", ARGV[1], "pool", ARGV[2], "capacity", ARGV[3],
           "labels", ARGV[4], "devices", ARGV[5], "state", "Ready", "heartbeat", redis_now(),
           "registered_at", ARGV[6], "reason", "", "heartbeat_every", ARGV[9],
           "stops_within", ARGV[10])
redis.call("HDEL", KEYS[2], "lost_at")
redis.call("SADD", KEYS[1], ARGV[1])
emit(KEYS[4], ARGV[7], "kind", "node", "node", ARGV[1])
return "ok:" .. epoch
"""

HEARTBEAT: Final = r"""
-- A worker says its node is alive.
-- KEYS[1] node hash  ARGV[1] epoch
local n = redis.call("HMGET", KEYS[1], "state", "epoch")
if not n[1] then return "missing" end
if n[2] ~= ARGV[1] then
  -- Only a later registration replaces a worker. An earlier epoch than the caller's means
  -- the store lost the caller's registration (Redis rolled back its last second).
  if (tonumber(n[2]) or 0) < (tonumber(ARGV[1]) or 0) then return "unregistered" end
  return "replaced"
end
if n[1] ~= "Ready" then return "state:" .. n[1] end
redis.call("HSET", KEYS[1], "heartbeat", redis_now())
return "ok"
"""

NODE_LEAVE: Final = _LOSE_PODS + r"""
-- A node stops: by its worker on shutdown (no lease, no timeout check), or by the
-- scheduler when its heartbeat is older than the timeout (fenced).
-- KEYS[1] lease  KEYS[2] node hash  KEYS[3] node pods set  KEYS[4] events
-- KEYS[5..] pod hashes of the node's pods set, as read
-- ARGV[1] lease holder, or "" for the worker itself  ARGV[2] timeout seconds (scheduler)
-- ARGV[3] epoch (worker)  ARGV[4] reason  ARGV[5] now  ARGV[6] events maxlen
-- ARGV[7..] the pod ids, in KEYS order
if ARGV[1] ~= "" and fenced(KEYS[1], ARGV[1]) then return "fenced" end
local n = redis.call("HMGET", KEYS[2], "state", "epoch", "heartbeat")
if not n[1] then return "missing" end
if n[1] ~= "Ready" then return "state:" .. n[1] end
if ARGV[1] == "" then
  if n[2] ~= ARGV[3] then return "replaced" end
elseif redis_now() - (tonumber(n[3]) or 0) < tonumber(ARGV[2]) then
  -- (an unreadable heartbeat, from a record written around kuota, counts as none)
  return "alive"
end
if not lose_pods(KEYS[3], 7, ARGV[5]) then return "stale" end
redis.call("HSET", KEYS[2], "state", "Lost", "reason", ARGV[4], "lost_at", ARGV[5])
emit(KEYS[4], ARGV[6], "kind", "node", "node", redis.call("HGET", KEYS[2], "name") or "")
return "ok"
"""

NODE_SCHEDULING: Final = r"""
-- An operator's say on a node: cordon (no new pods), drain (cordon, and the scheduler
-- requeues the workloads running there) or uncordon (both undone). Survives the worker's
-- re-registrations: the fields are the node's, not the incarnation's.
-- KEYS[1] node hash  KEYS[2] events  ARGV[1] node  ARGV[2] cordoned "1"/""
-- ARGV[3] draining "1"/""  ARGV[4] events maxlen
if redis.call("EXISTS", KEYS[1]) == 0 then return "missing" end
redis.call("HSET", KEYS[1], "cordoned", ARGV[2], "draining", ARGV[3])
emit(KEYS[2], ARGV[4], "kind", "node", "node", ARGV[1])
return "ok"
"""

NODE_REMOVE: Final = r"""
-- Forget a node that no worker serves (Lost): its record and its pods set. A Ready node
-- is refused: its worker would register it again at its next heartbeat.
-- KEYS[1] nodes set  KEYS[2] node hash  KEYS[3] node pods set  KEYS[4] events
-- ARGV[1] node  ARGV[2] events maxlen
local state = redis.call("HGET", KEYS[2], "state")
if not state and redis.call("SISMEMBER", KEYS[1], ARGV[1]) == 0 then return "missing" end
if state == "Ready" then return "state:Ready" end
redis.call("DEL", KEYS[2], KEYS[3])
redis.call("SREM", KEYS[1], ARGV[1])
emit(KEYS[4], ARGV[2], "kind", "node", "node", ARGV[1])
return "ok"
"""

NODE_FORGET: Final = r"""
-- The scheduler forgets a node Lost since before a cutoff (``--forget-lost-nodes``): its
-- record and its pods set, as NODE_REMOVE does. A worker that comes back under the name
-- registers it anew.
-- KEYS[1] lease  KEYS[2] nodes set  KEYS[3] node hash  KEYS[4] node pods set  KEYS[5] events
-- ARGV[1] lease holder  ARGV[2] node  ARGV[3] cutoff (epoch seconds)  ARGV[4] events maxlen
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local n = redis.call("HMGET", KEYS[3], "state", "lost_at")
if n[1] ~= "Lost" then return "state:" .. (n[1] or "missing") end
if not tonumber(n[2]) or tonumber(n[2]) >= tonumber(ARGV[3]) then return "young" end
redis.call("DEL", KEYS[3], KEYS[4])
redis.call("SREM", KEYS[2], ARGV[2])
emit(KEYS[5], ARGV[4], "kind", "node", "node", ARGV[2])
return "ok"
"""

LEASE_ACQUIRE: Final = _NOTE + r"""
-- Take the scheduler lease if free (or already held by this very caller); a new holder
-- gets a new fencing token. The same identity is not enough: two processes started
-- with one --identity must not both lead, so only the exact holder value re-takes it.
-- KEYS[1] lease  KEYS[2] fence  KEYS[3] quarantine hash  KEYS[4] where a quarantine hash
-- of the wrong type goes  KEYS[5], KEYS[6] where a malformed lease, fence goes
-- ARGV[1] identity  ARGV[2] ttl ms  ARGV[3] our holder or ""
--
-- Garbage in either key (written around kuota) would stop every scheduler for good: a
-- lease that is no `identity|token`, or never expires, is set aside (named, moved to
-- KEYS[5]) and the lease is free; a fence that is no counter is set aside (KEYS[6]) and
-- starts again from Redis's clock in seconds — above any count of reigns, so a token
-- is never handed out twice.
local function lease_problem()
  local t = redis.call("TYPE", KEYS[1]).ok
  if t == "none" then return nil end
  if t ~= "string" then return "a " .. t .. ", not a string" end
  local value = redis.call("GET", KEYS[1])
  if not string.match(value, "^[^|]+|%d+$") then
    return "not identity|token: " .. string.sub(value, 1, 80)
  end
  if redis.call("PTTL", KEYS[1]) < 0 then return "it never expires" end
  return nil
end
local function fence_problem()
  local t = redis.call("TYPE", KEYS[2]).ok
  if t == "none" then return nil end
  if t ~= "string" then return "a " .. t .. ", not a string" end
  local value = redis.call("GET", KEYS[2])
  if not string.match(value, "^%d+$") or #value > 15 then
    return "not a whole number: " .. string.sub(value, 1, 80)
  end
  return nil
end
local bad = lease_problem()
if bad then
  redis.call("RENAME", KEYS[1], KEYS[5])
  note_quarantined(KEYS[1], "scheduler lease: " .. bad .. ": moved to " .. KEYS[5])
end
bad = fence_problem()
if bad then
  redis.call("RENAME", KEYS[2], KEYS[6])
  note_quarantined(KEYS[2], "fencing token: " .. bad .. ": moved to " .. KEYS[6]
                   .. ", counting again from Redis's clock")
  redis.call("SET", KEYS[2], redis.call("TIME")[1])
end
local current = redis.call("GET", KEYS[1])
if current then
  if current ~= ARGV[3] then return "held:" .. current end
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return "ok:" .. current
end
local token = redis.call("INCR", KEYS[2])
local value = ARGV[1] .. "|" .. token
redis.call("SET", KEYS[1], value, "PX", ARGV[2])
return "ok:" .. value
"""

LEASE_RENEW: Final = r"""
-- Extend the lease if the caller still holds it (a lease key of another type is no
-- holder's: the next acquire sets it aside).
-- KEYS[1] lease  ARGV[1] holder value  ARGV[2] ttl ms
if redis.call("TYPE", KEYS[1]).ok ~= "string" then return "lost" end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return "lost" end
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return "ok"
"""

LEASE_RELEASE: Final = r"""
-- Give the lease up (clean shutdown) so a standby need not wait for the TTL.
-- KEYS[1] lease  ARGV[1] holder value
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return "lost" end
redis.call("DEL", KEYS[1])
return "ok"
"""
