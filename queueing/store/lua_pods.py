"""The Lua scripts of a pod's process, reported by the worker that runs it: its start
and its exit.

The conventions (status strings, the prologue's ``step``, ``stop_pods``, ``note`` and
``emit``: :mod:`queueing.store.lua_prologue`) are those of :mod:`queueing.store.lua`,
which lists these scripts with the workloads' own. Worker reports are not fenced: each is checked
against the pod's state, node and attempt instead.
"""

from __future__ import annotations

from typing import Final

POD_START: Final = r"""
-- A worker is about to start a pod: Placed -> Running, unless it should not run.
-- KEYS[1] pod hash  KEYS[2] workload hash  KEYS[3] node hash  KEYS[4] node pods set  KEYS[5] events
-- ARGV[1] pod id  ARGV[2] attempt  ARGV[3] node  ARGV[4] node epoch  ARGV[5] now
-- ARGV[6] devices  ARGV[7] events maxlen
-- ARGV[8] "1": the worker already runs a process for it (the store lost its start)
local p = redis.call("HMGET", KEYS[1], "state", "stop", "node", "epoch", "workload")
if not p[1] then return "missing" end
if p[1] ~= "Placed" then return "state:" .. p[1] end
if p[3] ~= ARGV[3] or p[4] ~= ARGV[4] then return "wrong-node" end
-- Asked to stop while a process of it runs: that process is stopped first, and its node
-- and quota stay held until its exit is reported (POD_EXIT, stopped).
if p[2] == "1" and ARGV[8] == "1" then return "stop" end
local w = redis.call("HMGET", KEYS[2], "state", "attempt")
local node = redis.call("HMGET", KEYS[3], "state", "epoch")
if p[2] == "1" or w[1] ~= "Admitted" or w[2] ~= ARGV[2]
    or node[1] ~= "Ready" or node[2] ~= ARGV[4] then
  -- Never started: give the node's capacity back and tell the scheduler.
  redis.call("HSET", KEYS[1], "state", "Stopped", "finished_at", ARGV[5])
  redis.call("SREM", KEYS[4], ARGV[1])
  emit(KEYS[5], ARGV[7], "kind", "pod", "key", p[5], "pod", ARGV[1])
  return "stopped"
end
redis.call("HSET", KEYS[1], "state", "Running", "started_at", ARGV[5], "devices", ARGV[6])
return "ok"
"""

POD_EXIT: Final = r"""
-- A pod's process ended. Record it; finish, retry or fail the gang as the exit says.
-- KEYS[1] pod hash  KEYS[2] workload hash  KEYS[3] node pods set  KEYS[4] history
-- KEYS[5] events  KEYS[6] the unfinished workloads zset  KEYS[7] the finished workloads zset
-- KEYS[8..] the other pods of the attempt
-- ARGV[1] pod id  ARGV[2] attempt  ARGV[3] exit code  ARGV[4] now
-- ARGV[5] "1" if stopped on request  ARGV[6] events maxlen  ARGV[7] message  ARGV[8] pid
-- ARGV[9] the reporting worker's node
local p = redis.call("HMGET", KEYS[1], "state", "workload", "stop", "node")
if not p[1] then return "missing" end
if p[1] ~= "Running" and p[1] ~= "Placed" then return "ok:" .. p[1] end
if ARGV[9] and ARGV[9] ~= "" and p[4] ~= ARGV[9] then
  -- A process of a placement Redis lost (its last second rolled back); the pod was placed
  -- again since, on another node, whose set holds it: that placement waits for its own
  -- start there, and nothing here is this process's to end.
  return "elsewhere"
end
if p[1] == "Placed" and ARGV[5] == "1" and p[3] ~= "1" then
  -- A process its worker stopped, for a placement the store never saw start and never
  -- asked to stop: that process belonged to a start Redis lost (its last second rolled
  -- back), and this placement -- made again since, same pod id -- still waits for its own.
  return "ok:Placed"
end
local code = tonumber(ARGV[3])
local phase = "Failed"
if ARGV[5] == "1" then phase = "Stopped" elseif code == 0 then phase = "Succeeded" end
redis.call("HSET", KEYS[1], "state", phase, "exit_code", ARGV[3], "finished_at", ARGV[4],
           "pid", ARGV[8])
redis.call("SREM", KEYS[3], ARGV[1])
-- One entry says it all: the node has this pod's room back, and the workload (which this
-- same script may finish, requeue or stop below) is to be looked at again.
emit(KEYS[5], ARGV[6], "kind", "pod", "key", p[2], "pod", ARGV[1])
local w = redis.call("HMGET", KEYS[2], "state", "attempt", "pods", "failures", "backoff_limit")
if w[1] ~= "Admitted" or w[2] ~= ARGV[2] or phase == "Stopped" then return "ok:" .. phase end
local now = tonumber(ARGV[4])
if phase == "Succeeded" then
  local done = redis.call("HINCRBY", KEYS[2], "pods_done", 1)
  if done >= tonumber(w[3]) then
    redis.call("HSET", KEYS[2], "state", step(w[1], "finish"), "outcome", "Succeeded",
               "reason", "Succeeded", "message", "all pods exited 0", "finished_at", ARGV[4])
    finished(KEYS[6], KEYS[7], p[2], ARGV[4])
    note(KEYS[4], {at = now, event = "Finished", outcome = "Succeeded"})
  end
  return "ok:" .. phase
end
-- The gang failed: its other pods are asked to stop, and while any is live the workload is
-- Evicting, holding its quota, until the scheduler sees them gone (STOPPED).
local stopping = stop_pods(8)
local failures = tonumber(w[4] or "0")
local after, message = "finish", ARGV[7]
if failures < tonumber(w[5] or "0") then
  after = "requeue"
  message = ARGV[7] .. "; retry " .. (failures + 1) .. " of " .. w[5]
  redis.call("HSET", KEYS[2], "failures", failures + 1, "reason", "PodFailed",
             "message", message)
  note(KEYS[4], {at = now, event = "Evicted", reason = "PodFailed", message = message,
                 attempt = tonumber(ARGV[2])})
else
  redis.call("HSET", KEYS[2], "outcome", "Failed", "reason", "BackoffLimitExceeded",
             "message", message)
end
if stopping then
  redis.call("HSET", KEYS[2], "state", step(w[1], "stop"), "after", after)
elseif after == "requeue" then
  -- Requeued keeping its place in line, as the engine does for evictions.
  redis.call("HSET", KEYS[2], "state", step(w[1], "evict"),
             "admission", "", "cq", "", "placement", "")
else
  redis.call("HSET", KEYS[2], "state", step(w[1], "finish"), "finished_at", ARGV[4])
  finished(KEYS[6], KEYS[7], p[2], ARGV[4])
  note(KEYS[4], {at = now, event = "Finished", outcome = "Failed", message = message})
end
return "ok:" .. phase
"""
