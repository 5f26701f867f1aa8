-- maintain.lua: one bounded housekeeping step of an endpoint. Expired leases (a dispatcher died
-- mid-call) are retried or failed by the task's tries; expired permits free their slot (a used
-- one counts as completed); expired slots of callers that call the endpoint themselves
-- (slot_take.lua) are freed, and never taken for a task's lease; tasks that waited past their
-- queue deadline time out; the archive backlog and the completion callbacks not handed on are
-- trimmed to the finished retention (by then their tasks are gone). With ARGV[9] = 1 the endpoint
-- was deleted: its waiting tasks are cancelled.
-- Then it sets the endpoint's entry in the due index (KEYS[16]) to the time its next work is
-- due (now or earlier when a step left work, or finished tasks wait for the archive), or removes
-- it when the endpoint has none: a pass visits only endpoints whose entry is due.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] batch: the most tasks each step handles  [9] deleted endpoint (0|1)
-- Returns {reaped leases, permits and slots, timed out, cancelled, empty, completions due}: empty
-- is 1 when the endpoint holds no task any more (no waiting, running or unarchived task, no
-- completion callback to hand on, no slot); completions due counts the completion callbacks
-- ready to be handed on (completions_claim.lua).
local now = now_ms()
local batch = tonumber(ARGV[8])
local reaped, timedout, cancelled = 0, 0, 0
-- Expired slots first: they leave the running set with the slots set, and are no task.
reaped = reap_slots(now, batch)
local expired = redis.call('ZRANGEBYSCORE', K_RUN, '-inf', now, 'LIMIT', 0, batch)
for _, id in ipairs(expired) do
  redis.call('ZREM', K_RUN, id)
  reaped = reaped + 1
  local tk = task_key(id)
  local v = {}
  if string.sub(id, 1, 5) == 'slot:' then
    redis.call('ZREM', K_SLOTS, id) -- in running only (never left so by the scripts): freed
  else
    v = redis.call('HMGET', tk, 'st', 'att', 'tries', 'pu', 'sa')
  end
  if v[1] == 'processing' then
    if tonumber(v[2]) < tonumber(v[3]) then
      requeue(id, {'err', 'lease expired: the dispatcher did not report the call'})
    else
      finish(id, 'failed', now, {'err', 'lease expired: the dispatcher did not report the call (no tries left)'})
    end
  elseif v[1] == 'permitted' then
    if v[4] == '1' then
      record_call(now - tonumber(v[5]))
      finish(id, 'completed', now)
    else
      finish(id, 'failed', now, {'err', 'permit expired unused'})
    end
  end
end
if reaped > 0 then wake() end
local late = redis.call('ZRANGEBYSCORE', K_WAIT, '-inf', now, 'LIMIT', 0, batch)
for _, id in ipairs(late) do
  redis.call('ZREM', K_WAIT, id)
  local tk = task_key(id)
  local v = redis.call('HMGET', tk, 'st', 'sq', 'subj')
  if v[1] == 'pending' then
    redis.call('ZREM', K_QUEUE, id)
    redis.call('ZREM', K_DELAYED, id)
    unsubject(tk, v[2], v[3])
    finish(id, 'timeout', now)
    timedout = timedout + 1
  end
end
if ARGV[9] == '1' then
  local gone = redis.call('ZRANGE', K_WAIT, 0, batch - 1)
  local retrying = redis.call('ZRANGE', K_DELAYED, 0, batch - 1)
  for _, id in ipairs(retrying) do gone[#gone + 1] = id end
  for _, id in ipairs(gone) do
    redis.call('ZREM', K_WAIT, id)
    redis.call('ZREM', K_QUEUE, id)
    redis.call('ZREM', K_DELAYED, id)
    local tk = task_key(id)
    local v = redis.call('HMGET', tk, 'st', 'sq', 'subj')
    if v[1] == 'pending' then
      unsubject(tk, v[2], v[3])
      finish(id, 'cancelled', now, {'err', 'endpoint deleted'})
      cancelled = cancelled + 1
    end
  end
end
flush(now)
redis.call('ZREMRANGEBYSCORE', K_ARCH, '-inf', now - FINISHED_TTL)
redis.call('ZREMRANGEBYSCORE', K_DONE, '-inf', now - FINISHED_TTL)
due_set(K_DUE, ENDPOINT, {
  {K_RUN, 0}, {K_WAIT, 0}, {K_DONE, 0}, {K_ARCH, ARCHIVE and 0 or FINISHED_TTL},
})
local empty = 0
if redis.call('ZCARD', K_WAIT) + redis.call('ZCARD', K_QUEUE) + redis.call('ZCARD', K_DELAYED)
  + redis.call('ZCARD', K_RUN) + redis.call('ZCARD', K_ARCH) + redis.call('ZCARD', K_DONE) == 0 then
  empty = 1
  if ARGV[9] == '1' then
    -- A deleted endpoint that holds nothing any more: its counters go too.
    redis.call('DEL', K_SEQ, K_RATE, K_RING, K_COUNTS, K_SUBJ, K_STARTS, K_SLOTS, K_FAIR)
  end
end
return {reaped, timedout, cancelled, empty, redis.call('ZCOUNT', K_DONE, '-inf', int_str(now))}
