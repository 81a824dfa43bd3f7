"""The store's Lua scripts: every state change is one of these, run atomically by Redis.

Each script lists its ``KEYS[]`` and ``ARGV[]`` in a header; keys come only
from :mod:`queueing.store.keys`. Scripts answer with a status string rather
than raising, so a pipeline of many calls never aborts half-way (``admit`` and
``place`` carry many requests and answer a list, one status per request):

``ok`` / ``ok:<value>``   done (or had already been done by the same request)
``fenced``                the caller no longer holds the scheduler lease
``missing``               no such workload / pod / node
``state:<State>``         the transition is not legal from the current state
``stale:<attempt>``       the caller's view is older than Redis's (re-read, retry)

The workloads' scripts are here; the pods' (what workers report of their
processes) are in :mod:`queueing.store.lua_pods`, the nodes' and the lease's in
:mod:`queueing.store.lua_nodes`. :data:`SCRIPTS` names them all.

**One lifecycle table, shared helpers.** The workload transitions are not re-typed
in Lua: scripts move a workload only through ``step(state, event)``, whose table is
rendered from :data:`quota.lifecycle.TRANSITIONS`. That and the helpers every script
may call are the prologue (:mod:`queueing.store.lua_prologue`); each script is sent with
the part of it that it uses.

**Fencing.** Scheduler decisions (admit, place, evict, reject, node loss,
pending reasons) carry the writer's lease value ``identity|token``; the script
compares it with the lease key inside the same atomic step, so a deposed
leader's late writes are refused even if it still believes it leads. Facts
reported by workers (a pod started or exited, a node heartbeat) and user
requests (submit, cancel) are not fenced: they are checked against the
workload's state and attempt instead.

**Idempotence.** A retried write finds its own effect and answers ``ok``:
submissions carry a submission id, admissions a decision id, placements their
node list, pod reports the pod's current phase.

Times: ``now`` arguments are the caller's clock (seconds since the epoch);
node heartbeats and the node-timeout check use Redis's own ``TIME`` so that
workers and schedulers on different machines compare one clock.
"""

from __future__ import annotations

from functools import cache
from typing import Final

from queueing.store.lua_nodes import (
    HEARTBEAT,
    LEASE_ACQUIRE,
    LEASE_RELEASE,
    LEASE_RENEW,
    NODE_FORGET,
    NODE_LEAVE,
    NODE_REMOVE,
    NODE_SCHEDULING,
    REGISTER_NODE,
)
from queueing.store.lua_pods import POD_EXIT, POD_START
from queueing.store.lua_prologue import needed
from queueing.store.lua_quarantine import DROP_MEMBER, NOTE, SET_ASIDE

#: The fields the submit script sets itself, never among the submission's own.
SUBMIT_SETS: Final = frozenset({"key", "state", "attempt", "submission", "created",
                                "queued_at", "failures", "pods", "pods_done"})

SUBMIT: Final = r"""
-- Submit a workload, or find the same submission already there.
-- KEYS[1] workload hash  KEYS[2] workloads zset  KEYS[3] history  KEYS[4] events
-- KEYS[5] the namespace's workloads zset (what a namespace's submitters may list)
-- KEYS[6] the unfinished workloads zset  KEYS[7] the finished workloads zset
-- ARGV[1] workload key  ARGV[2] submission id  ARGV[3] now  ARGV[4] events maxlen
-- ARGV[5..] field, value, ... (spec, queue, priority, backoff_limit; none of the fields
-- this script sets itself: SUBMIT_SETS)
-- (one call where one does: a burst of submissions keeps Redis busier than anything else)
local w = redis.call("HMGET", KEYS[1], "state", "submission", "attempt")
local state = w[1]
if state and state ~= "Finished" then
  if w[2] == ARGV[2] then return "ok:again" end
  return "exists:" .. state
end
-- A finished workload of the same name is replaced; attempts keep counting so
-- the new pods never reuse the old pods' keys.
local attempt = tonumber(w[3] or "0")
redis.call("DEL", KEYS[1], KEYS[3])
redis.call("HSET", KEYS[1], "key", ARGV[1], "state", "Pending", "attempt", attempt,
           "submission", ARGV[2],
           "created", ARGV[3], "queued_at", ARGV[3], "failures", 0, "pods", 0, "pods_done", 0,
           unpack(ARGV, 5))
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[1])
redis.call("ZADD", KEYS[5], ARGV[3], ARGV[1])
redis.call("ZADD", KEYS[6], ARGV[3], ARGV[1])
redis.call("ZREM", KEYS[7], ARGV[1])
note(KEYS[3], {at = tonumber(ARGV[3]), event = "Submitted"})
emit(KEYS[4], ARGV[4], "kind", "workload", "key", ARGV[1])
return "ok"
"""

ADMIT: Final = r"""
-- Persist admissions decided by the scheduler (quota reserved, and admitted unless only
-- reserved), one after the other in one atomic call; one status per request.
-- KEYS[1] lease  KEYS[2] events
-- then per request i (0-based): KEYS[3+2i] workload hash  KEYS[4+2i] history
-- ARGV[1] lease holder  ARGV[2] now
-- then per request i, from b = 3+6i: ARGV[b] expected attempt  ARGV[b+1] admission JSON
-- ARGV[b+2] ClusterQueue  ARGV[b+3] pod count  ARGV[b+4] decision id
-- ARGV[b+5] "1" to admit, "0" to only reserve quota (admission checks pending)
local n = (#KEYS - 2) / 2
local out = {}
if fenced(KEYS[1], ARGV[1]) then
  for i = 1, n do out[i] = "fenced" end
  return out
end
local now = tonumber(ARGV[2])
local function admit(workload, history, b)
  local w = redis.call("HMGET", workload, "state", "attempt", "decision")
  if not w[1] then return "missing" end
  if w[3] == ARGV[b + 4] then return "ok:" .. w[2] end
  if w[2] ~= ARGV[b] then return "stale:" .. w[2] end
  -- The admission checks of a stored reservation passed: admitted in the same attempt
  -- (the admission may now name the member cluster dispatch chose).
  if w[1] == "QuotaReserved" and ARGV[b + 5] == "1" then
    local target = step(w[1], "admit")
    redis.call("HSET", workload, "state", target, "admission", ARGV[b + 1], "reason", "",
               "message", "", "decision", ARGV[b + 4])
    note(history, {at = now, event = target, clusterQueue = ARGV[b + 2],
                   attempt = tonumber(w[2])})
    decided_later(workload)
    return "ok:" .. w[2]
  end
  local reserved = step(w[1], "reserve")
  local admitted = reserved
  if reserved and ARGV[b + 5] == "1" then admitted = step(reserved, "admit") end
  if not admitted then return "state:" .. w[1] end
  local attempt = tonumber(w[2]) + 1
  redis.call("HSET", workload, "state", admitted, "admission", ARGV[b + 1],
             "cq", ARGV[b + 2], "admitted_at", ARGV[2], "attempt", attempt, "placement", "",
             "pods", ARGV[b + 3], "pods_done", 0, "reason", "", "message", "",
             "decision", ARGV[b + 4])
  note(history, {at = now, event = admitted, clusterQueue = ARGV[b + 2], attempt = attempt})
  decided_later(workload)
  return "ok:" .. attempt
end
for i = 0, n - 1 do
  out[i + 1] = admit(KEYS[3 + 2 * i], KEYS[4 + 2 * i], 3 + 6 * i)
end
emit_decided(KEYS[2])
return out
"""

PLACE: Final = r"""
-- Persist where every pod of admitted gangs runs, gang after gang in one atomic call: all
-- pods of a gang or none; one status per gang.
-- KEYS[1] lease  KEYS[2] events
-- then per gang: its workload hash, its history, then per pod its pod hash, node hash and
-- node pods set
-- ARGV[1] lease holder  ARGV[2] now
-- then per gang: its attempt, placement JSON and pod count, then per pod its pod id, node,
-- pod set, requests JSON and the node epoch the placement was computed for
local out = {}
local k, a = 3, 3  -- where the next gang's keys and arguments begin
-- Each node's state and epoch, read once per call (no script changes them): the gangs of a
-- round mostly share a few nodes.
local nodes = {}
local function place(workload, history, pods_at, pods)
  local w = redis.call("HMGET", workload, "state", "attempt", "placement", "key")
  if not w[1] then return "missing" end
  if w[1] ~= "Admitted" then return "state:" .. w[1] end
  if w[2] ~= ARGV[a] then return "stale:" .. w[2] end
  if w[3] and w[3] ~= "" then
    if w[3] == ARGV[a + 1] then return "ok:again" end
    return "placed"
  end
  for i = 0, pods - 1 do
    local node_key = KEYS[pods_at + 1 + 3 * i]
    local node = nodes[node_key]
    if not node then
      node = redis.call("HMGET", node_key, "state", "epoch")
      nodes[node_key] = node
    end
    if node[1] ~= "Ready" or node[2] ~= ARGV[a + 7 + 5 * i] then
      return "node:" .. ARGV[a + 4 + 5 * i]
    end
  end
  local key = w[4]
  for i = 0, pods - 1 do
    local p = a + 3 + 5 * i
    redis.call("HSET", KEYS[pods_at + 3 * i], "workload", key,
               "attempt", ARGV[a], "index", i, "node", ARGV[p + 1], "epoch", ARGV[p + 4],
               "pod_set", ARGV[p + 2], "requests", ARGV[p + 3], "state", "Placed",
               "stop", "0", "placed_at", ARGV[2])
    redis.call("SADD", KEYS[pods_at + 2 + 3 * i], ARGV[p])
  end
  redis.call("HSET", workload, "placement", ARGV[a + 1], "reason", "", "message", "")
  note(history, {at = tonumber(ARGV[2]), event = "Placed", nodes = cjson.decode(ARGV[a + 1]),
                 attempt = tonumber(ARGV[a])})
  decided_later(workload, key)
  return "ok"
end
local fenced_out = fenced(KEYS[1], ARGV[1])
while k <= #KEYS do
  local pods = tonumber(ARGV[a + 2])
  if fenced_out then
    out[#out + 1] = "fenced"
  else
    out[#out + 1] = place(KEYS[k], KEYS[k + 1], k + 2, pods)
  end
  k = k + 2 + 3 * pods
  a = a + 3 + 5 * pods
end
emit_decided(KEYS[2])
return out
"""

SETTLE: Final = r"""
-- Apply a scheduler decision that ends a workload's hold on quota or its chance to run.
-- ``stop``: a workload holding quota is evicted (preemption, node failure, a stopped queue,
-- or a deactivation): Evicting, its pods asked to stop, its quota and admission kept until
-- they are gone (STOPPED); ARGV[8] says what follows then, ``requeue`` or ``deactivate``.
-- ``evict`` requeues at once (a dispatched copy, whose quota its manager holds);
-- ``deactivate`` takes a waiting workload out; ``activate`` gives an Inactive one its
-- chance back.
-- KEYS[1] lease  KEYS[2] workload hash  KEYS[3] history  KEYS[4] events
-- KEYS[5..] pod hashes of the attempt
-- ARGV[1] lease holder  ARGV[2] attempt  ARGV[3] event  ARGV[4] reason  ARGV[5] message
-- ARGV[6] now  ARGV[7] queue-order timestamp after the change  ARGV[8] after a stop
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local w = redis.call("HMGET", KEYS[2], "state", "attempt")
if not w[1] then return "missing" end
if w[2] ~= ARGV[2] then return "stale:" .. w[2] end
-- Already stopping (a failed pod or a cancel began it): what follows stays as it was set.
if ARGV[3] == "stop" and w[1] == "Evicting" then return "ok:again" end
local target = step(w[1], ARGV[3])
if not target then return "state:" .. w[1] end
if HOLDS_QUOTA[w[1]] then stop_pods(5) end
redis.call("HSET", KEYS[2], "state", target, "queued_at", ARGV[7], "reason", ARGV[4],
           "message", ARGV[5])
if ARGV[3] == "stop" then
  redis.call("HSET", KEYS[2], "after", ARGV[8])
else
  redis.call("HSET", KEYS[2], "admission", "", "cq", "", "placement", "")
end
local event = "Evicted"
if ARGV[3] == "deactivate" then event = "Deactivated" end
if ARGV[3] == "activate" then event = "Activated" end
note(KEYS[3], {at = tonumber(ARGV[6]), event = event, reason = ARGV[4],
               message = ARGV[5], attempt = tonumber(ARGV[2])})
decided(KEYS[4], KEYS[2])
return "ok"
"""

STOPPED: Final = r"""
-- The pods of an Evicting workload are gone: release its quota, and requeue, deactivate or
-- finish it as its eviction said (``after``). Refused (``running``) while a pod of the
-- attempt is still placed or running: the quota is held as long as the pods hold nodes.
-- KEYS[1] lease  KEYS[2] workload hash  KEYS[3] history  KEYS[4] events
-- KEYS[5] the unfinished workloads zset  KEYS[6] the finished workloads zset
-- KEYS[7..] pod hashes of the attempt
-- ARGV[1] lease holder  ARGV[2] attempt  ARGV[3] now  ARGV[4] workload key
-- ARGV[5] events maxlen
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local w = redis.call("HMGET", KEYS[2], "state", "attempt", "after", "outcome")
if not w[1] then return "missing" end
if w[2] ~= ARGV[2] then return "stale:" .. w[2] end
if w[1] ~= "Evicting" then return "state:" .. w[1] end
for i = 7, #KEYS do
  local phase = redis.call("HGET", KEYS[i], "state")
  if phase == "Placed" or phase == "Running" then return "running" end
end
local now = tonumber(ARGV[3])
local target
if w[3] == "finish" then
  target = step(w[1], "finish")
  redis.call("HSET", KEYS[2], "state", target, "finished_at", ARGV[3])
  finished(KEYS[5], KEYS[6], ARGV[4], ARGV[3])
  note(KEYS[3], {at = now, event = "Finished", outcome = w[4]})
else
  local event, entry = "stopped", "Requeued"
  if w[3] == "deactivate" then event, entry = "deactivate", "Deactivated" end
  target = step(w[1], event)
  redis.call("HSET", KEYS[2], "state", target, "admission", "", "cq", "", "placement", "")
  note(KEYS[3], {at = now, event = entry, attempt = tonumber(ARGV[2])})
end
redis.call("HDEL", KEYS[2], "after")
emit(KEYS[4], ARGV[5], "kind", "workload", "key", ARGV[4])
return "ok:" .. target
"""

REJECT: Final = r"""
-- Finish a workload the scheduler cannot read (invalid spec written around the client).
-- KEYS[1] lease  KEYS[2] workload hash  KEYS[3] history  KEYS[4] events
-- KEYS[5] the unfinished workloads zset  KEYS[6] the finished workloads zset
-- ARGV[1] lease holder  ARGV[2] message  ARGV[3] now  ARGV[4] workload key
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local state = redis.call("HGET", KEYS[2], "state")
if not state then return "missing" end
local target = step(state, "finish")
if not target then return "state:" .. state end
redis.call("HSET", KEYS[2], "state", target, "outcome", "Rejected", "reason", "Invalid",
           "message", ARGV[2], "finished_at", ARGV[3])
finished(KEYS[5], KEYS[6], ARGV[4], ARGV[3])
note(KEYS[3], {at = tonumber(ARGV[3]), event = "Rejected", message = ARGV[2]})
decided(KEYS[4], KEYS[2])
return "ok"
"""

QUARANTINE: Final = r"""
-- Set aside a workload the scheduler cannot handle: state Invalid, the error as its message,
-- its pods asked to stop. A state this version cannot read (a record written around kuota)
-- is quarantined too: anything but Finished or Invalid.
-- KEYS[1] lease  KEYS[2] workload hash  KEYS[3] history  KEYS[4] events  KEYS[5..] pod hashes
-- ARGV[1] lease holder  ARGV[2] workload key  ARGV[3] message  ARGV[4] now
-- ARGV[5] events maxlen
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local state = redis.call("HGET", KEYS[2], "state")
if not state then
  if redis.call("EXISTS", KEYS[2]) == 0 then return "missing" end
  state = ""
end
if state == "Finished" or state == "Invalid" then return "state:" .. state end
local target = step(state, "quarantine") or "Invalid"
stop_pods(5)
redis.call("HSET", KEYS[2], "state", target, "reason", "Invalid", "message", ARGV[3],
           "quarantined_at", ARGV[4])
note(KEYS[3], {at = tonumber(ARGV[4]), event = target, message = ARGV[3]})
emit(KEYS[4], ARGV[5], "kind", "workload", "key", ARGV[2])
return "ok"
"""

SET_REASONS: Final = r"""
-- Record why workloads wait: for quota (Pending), for admission checks (QuotaReserved)
-- or for nodes (Admitted, not placed yet).
-- KEYS[1] lease  KEYS[2..] workload hashes
-- ARGV[1] lease holder  then per workload: attempt, reason, message
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local n = 0
for i = 2, #KEYS do
  local base = 2 + (i - 2) * 3
  local w = redis.call("HMGET", KEYS[i], "state", "attempt")
  if (w[1] == "Pending" or w[1] == "QuotaReserved" or w[1] == "Admitted")
      and w[2] == ARGV[base] then
    redis.call("HSET", KEYS[i], "reason", ARGV[base + 1], "message", ARGV[base + 2])
    n = n + 1
  end
end
return "ok:" .. n
"""

SET_DISPATCH: Final = r"""
-- Record multi-cluster dispatch decisions (JSON, for `kuota why`) on workloads holding quota.
-- KEYS[1] lease  KEYS[2] workload hash
-- ARGV[1] lease holder  ARGV[2] attempt the decision was made for  ARGV[3] decision JSON
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local w = redis.call("HMGET", KEYS[2], "state", "attempt")
if not w[1] then return "missing" end
if w[2] ~= ARGV[2] then return "stale:" .. w[2] end
if not HOLDS_QUOTA[w[1]] then return "state:" .. w[1] end
redis.call("HSET", KEYS[2], "dispatch", ARGV[3])
return "ok"
"""

CANCEL: Final = r"""
-- Cancel a workload at the user's request: finish it and stop its pods. One whose pods are
-- still live is Evicting until they are gone (the scheduler finishes it then, STOPPED):
-- its quota stays held while they run.
-- KEYS[1] workload hash  KEYS[2] history  KEYS[3] events  KEYS[4] the unfinished zset
-- KEYS[5] the finished zset  KEYS[6..] pod hashes of the attempt
-- ARGV[1] workload key  ARGV[2] attempt as read  ARGV[3] now  ARGV[4] events maxlen
-- ARGV[5] message
local w = redis.call("HMGET", KEYS[1], "state", "attempt", "after")
if not w[1] then return "missing" end
if w[2] ~= ARGV[2] then return "stale:" .. w[2] end
if w[1] == "Evicting" and w[3] == "finish" then return "ok:again" end
local target = step(w[1], "finish")
if not target then return "state:" .. w[1] end
if stop_pods(6) then
  redis.call("HSET", KEYS[1], "state", "Evicting", "after", "finish")
else
  redis.call("HSET", KEYS[1], "state", target, "finished_at", ARGV[3])
  finished(KEYS[4], KEYS[5], ARGV[1], ARGV[3])
end
redis.call("HSET", KEYS[1], "outcome", "Cancelled", "reason", "Cancelled", "message", ARGV[5])
note(KEYS[2], {at = tonumber(ARGV[3]), event = "Cancelled", message = ARGV[5]})
emit(KEYS[3], ARGV[4], "kind", "workload", "key", ARGV[1])
return "ok"
"""

DISPATCH: Final = r"""
-- Store a workload dispatched here by a manager (multi-cluster dispatch): already admitted
-- there, so it starts Admitted, with no ClusterQueue (no quota counted here). Create-if-absent:
-- a record of the same origin is the same copy.
-- KEYS[1] workload hash  KEYS[2] workloads zset  KEYS[3] history  KEYS[4] events
-- KEYS[5] the origin's index of its copies  KEYS[6] the unfinished workloads zset
-- KEYS[7] the finished workloads zset
-- ARGV[1] workload key  ARGV[2] origin  ARGV[3] now  ARGV[4] events maxlen  ARGV[5] spec JSON
-- ARGV[6] admission JSON  ARGV[7] pod count  ARGV[8] backoff limit  ARGV[9] message
local w = redis.call("HMGET", KEYS[1], "state", "origin", "attempt")
if w[1] then
  if w[2] == ARGV[2] then
    redis.call("SADD", KEYS[5], ARGV[1])
    return "ok:exists"
  end
  if w[1] ~= "Finished" then return "exists:" .. w[1] end
end
-- A finished workload of that name is replaced; attempts keep counting (pod keys stay unique).
local attempt = tonumber(w[3] or "0") + 1
redis.call("DEL", KEYS[1], KEYS[3])
redis.call("HSET", KEYS[1], "key", ARGV[1], "spec", ARGV[5], "queue", "", "priority", 0,
           "backoff_limit", ARGV[8], "state", "Admitted", "attempt", attempt,
           "origin", ARGV[2], "admission", ARGV[6], "cq", "", "admitted_at", ARGV[3],
           "created", ARGV[3], "queued_at", ARGV[3], "placement", "", "pods", ARGV[7],
           "pods_done", 0, "failures", 0, "outcome", "", "reason", "Dispatched",
           "message", ARGV[9], "submission", "", "decision", "")
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[1])
redis.call("ZADD", KEYS[6], ARGV[3], ARGV[1])
redis.call("ZREM", KEYS[7], ARGV[1])
redis.call("SADD", KEYS[5], ARGV[1])
note(KEYS[3], {at = tonumber(ARGV[3]), event = "Dispatched", origin = ARGV[2],
               attempt = attempt})
emit(KEYS[4], ARGV[4], "kind", "workload", "key", ARGV[1])
return "ok:created"
"""

REMOVE_DISPATCHED: Final = r"""
-- Remove a dispatched workload at its manager's request: stop its pods, delete the record.
-- KEYS[1] workload hash  KEYS[2] workloads zset  KEYS[3] history  KEYS[4] events
-- KEYS[5] the origin's index of its copies  KEYS[6] the unfinished workloads zset
-- KEYS[7] the finished workloads zset  KEYS[8..] pod hashes of the attempt as read
-- ARGV[1] workload key  ARGV[2] origin  ARGV[3] attempt as read  ARGV[4] events maxlen
local w = redis.call("HMGET", KEYS[1], "state", "origin", "attempt")
if not w[1] then return "ok:absent" end
if w[2] ~= ARGV[2] then return "origin:" .. (w[2] or "") end
if w[3] ~= ARGV[3] then return "stale:" .. w[3] end
stop_pods(8)
redis.call("DEL", KEYS[1], KEYS[3])
redis.call("ZREM", KEYS[2], ARGV[1])
redis.call("ZREM", KEYS[6], ARGV[1])
redis.call("ZREM", KEYS[7], ARGV[1])
redis.call("SREM", KEYS[5], ARGV[1])
emit(KEYS[4], ARGV[4], "kind", "workload", "key", ARGV[1])
return "ok:deleted"
"""

PURGE_FINISHED: Final = r"""
-- Retention: forget a workload that finished before a cutoff -- its record, history,
-- and every attempt's pods and logs. Anything not Finished, or finished later, stays;
-- so does a copy a manager dispatched here, which its manager removes once it has seen
-- the end (forgotten first, the copy would be sent again). Whatever stays leaves the
-- finished index, or gets its true end time there, so that the scheduler, which reads
-- that index oldest first, never meets it again before its time.
-- Its submission id is kept a while in the namespace's purged set: a submitter that
-- finds the name gone can tell forgotten from lost.
-- KEYS[1] lease  KEYS[2] workload hash  KEYS[3] workloads zset  KEYS[4] history
-- KEYS[5] the namespace's workloads zset  KEYS[6] the namespace's purged zset
-- KEYS[7] the unfinished workloads zset  KEYS[8] the finished workloads zset
-- KEYS[9..] pod hashes and logs of every attempt
-- ARGV[1] lease holder  ARGV[2] workload key  ARGV[3] cutoff (epoch seconds)
-- ARGV[4] most purged submissions kept per namespace
if fenced(KEYS[1], ARGV[1]) then return "fenced" end
local w = redis.call("HMGET", KEYS[2], "state", "finished_at", "submission", "origin")
if not w[1] then
  for _, index in ipairs({KEYS[3], KEYS[5], KEYS[7], KEYS[8]}) do
    redis.call("ZREM", index, ARGV[2])
  end
  return "ok:absent"
end
if w[1] ~= "Finished" then
  redis.call("ZREM", KEYS[8], ARGV[2])
  return "state:" .. w[1]
end
if w[4] and w[4] ~= "" then
  redis.call("ZREM", KEYS[8], ARGV[2])
  return "dispatched"
end
if not w[2] or not tonumber(w[2]) then
  redis.call("ZREM", KEYS[8], ARGV[2])
  return "young"
end
if tonumber(w[2]) >= tonumber(ARGV[3]) then
  redis.call("ZADD", KEYS[8], w[2], ARGV[2])
  return "young"
end
for i = 9, #KEYS do redis.call("DEL", KEYS[i]) end
redis.call("DEL", KEYS[2], KEYS[4])
for _, index in ipairs({KEYS[3], KEYS[5], KEYS[7], KEYS[8]}) do
  redis.call("ZREM", index, ARGV[2])
end
if w[3] and w[3] ~= "" then
  redis.call("ZADD", KEYS[6], redis_now(), w[3])
  redis.call("ZREMRANGEBYRANK", KEYS[6], 0, -tonumber(ARGV[4]) - 1)
end
return "ok:purged"
"""

READ_MANY: Final = r"""
-- Read some fields of many workloads in one command: the scheduler re-reads the workloads
-- each slice of events names, and one script costs the client far less to send and parse
-- than a pipeline of one HMGET per key. With states to skip, only the workloads in none of
-- them are read, the rest skipped in Redis (a scheduler taking over reads its queue: the
-- finished workloads a pool keeps are never sent). One answer per key: the fields' values
-- (nil where unset: a hash holding none of them answers all nil), or nil — no such hash,
-- or one in a state to skip. A hash without a state is read: every reader must find it
-- corrupt, not gone.
-- KEYS[1], KEYS[2], ... workload hashes
-- ARGV[1] how many states follow  ARGV[2..] the states to skip, then the fields to read
local n = tonumber(ARGV[1])
local skip = {}
for i = 2, n + 1 do skip[ARGV[i]] = true end
local fields = {unpack(ARGV, n + 2)}
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = false
  local state = n > 0 and redis.call("HGET", key, "state")
  if not (state and skip[state]) then
    local values = redis.call("HMGET", key, unpack(fields))
    local found = false
    for _, value in ipairs(values) do
      if value then found = true break end
    end
    if found or redis.call("EXISTS", key) == 1 then out[i] = values end
  end
end
return out
"""

INDEX_WORKLOADS: Final = r"""
-- Put some stored workloads in the unfinished or the finished index, whichever their
-- state says, where missing (a store written before the indexes existed). Each state is
-- read and indexed in this one call: a workload finishing or submitted again meanwhile
-- keeps the indexes right through its own script.
-- KEYS[1] the unfinished workloads zset  KEYS[2] the finished workloads zset
-- KEYS[3..n+2] workload hashes
-- ARGV[1] .. ARGV[n] their submission times, ARGV[n+1] .. ARGV[2n] their workload keys
local n = #KEYS - 2
local added = 0
for i = 1, n do
  local w = redis.call("HMGET", KEYS[i + 2], "state", "finished_at")
  if w[1] == "Finished" then
    if w[2] and tonumber(w[2]) then
      added = added + redis.call("ZADD", KEYS[2], "NX", w[2], ARGV[n + i])
    end
  elseif w[1] then
    added = added + redis.call("ZADD", KEYS[1], "NX", ARGV[i], ARGV[n + i])
  end
end
return added
"""

#: Every script, by name; each gets the part of the prologue it uses.
SCRIPTS: Final = {
    "submit": SUBMIT, "admit": ADMIT, "place": PLACE, "settle": SETTLE, "stopped": STOPPED,
    "reject": REJECT,
    "quarantine": QUARANTINE,
    "set_reasons": SET_REASONS, "set_dispatch": SET_DISPATCH, "cancel": CANCEL,
    "dispatch": DISPATCH, "remove_dispatched": REMOVE_DISPATCHED,
    "pod_start": POD_START, "pod_exit": POD_EXIT,
    "register_node": REGISTER_NODE, "node_scheduling": NODE_SCHEDULING,
    "node_remove": NODE_REMOVE, "node_forget": NODE_FORGET, "heartbeat": HEARTBEAT,
    "node_leave": NODE_LEAVE,
    "purge_finished": PURGE_FINISHED, "index_workloads": INDEX_WORKLOADS,
    "lease_acquire": LEASE_ACQUIRE, "lease_renew": LEASE_RENEW, "lease_release": LEASE_RELEASE,
    "read_many": READ_MANY,
    "set_aside": SET_ASIDE, "drop_member": DROP_MEMBER, "note": NOTE,
}


@cache
def source(name: str) -> str:
    """The full text Redis runs for script ``name``: the definitions of the prologue it
    uses, then the script. Worked out on first use: all of them at import cost every
    ``kuota`` command a hundredth of a second, and a command runs two or three."""
    body = SCRIPTS[name]
    return needed(body) + body
