-- cancel.lua: cancel a task. A waiting task is cancelled at once; a running offline call is
-- marked cancelled (its slot stays taken until the call returns or its lease ends, and its result
-- is discarded); a permitted online task frees its slot and its permit stops working.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] id
-- Returns {status after the call, 1 when this call cancelled it}, or {} for no such task.
local id = ARGV[8]
local tk = task_key(id)
local v = redis.call('HMGET', tk, 'st', 'sq', 'subj')
local st = v[1]
if not st then return {} end
local now = now_ms()
if st == 'pending' then
  redis.call('ZREM', K_QUEUE, id)
  redis.call('ZREM', K_WAIT, id)
  redis.call('ZREM', K_DELAYED, id)
  unsubject(tk, v[2], v[3])
  finish(id, 'cancelled', now)
  flush(now)
  return {'cancelled', 1}
elseif st == 'processing' then
  finish(id, 'cancelled', now)
  flush(now)
  return {'cancelled', 1}
elseif st == 'permitted' then
  redis.call('ZREM', K_RUN, id)
  finish(id, 'cancelled', now)
  flush(now)
  wake()
  return {'cancelled', 1}
end
return {st, 0}
