-- maintain.lua: the housekeeping a consume does, for queues nobody is reading: expired jobs out,
-- due jobs in, expired leases retried or dead-lettered, dead letter and results trimmed. Each step
-- moves at most the batch size, so a pass never blocks Redis for long; safe in many processes.
-- Then it sets the queue's entry in the due index (KEYS[13]) to the time its next work is due,
-- which is now or earlier when a step left work for the next pass, or removes the entry when the
-- queue has none: a pass only visits the queues whose entry is due.
-- KEYS: the queue keys (lib.lua).
-- Returns: {promoted, leases reaped, dead and results dropped, next_wake_ms, now_ms} (now: the
-- client's reading of Redis's clock, clock.go).
local now = now_ms()
local promoted, reaped = housekeeping(now)
local dropped = trim(K_DEAD, now, DEAD_RETENTION, DEAD_MAX, 'dead_dropped')
dropped = dropped + trim(K_DONE, now, RESULT_RETENTION, RESULT_MAX, nil)
flush_notify()

-- first_due is the score of the zset's first member plus after (ms), or nil when it is empty.
local function first_due(key, after)
  local first = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
  if first[2] then return tonumber(first[2]) + after end
  return nil
end

local next_due
for _, due in pairs({
  first_due(K_DELAYED, 0), first_due(K_LEASED, 0), first_due(K_EXPIRY, 0),
  arg_num(DEAD_RETENTION) > 0 and first_due(K_DEAD, arg_num(DEAD_RETENTION)) or nil,
  arg_num(RESULT_RETENTION) > 0 and first_due(K_DONE, arg_num(RESULT_RETENTION)) or nil,
}) do
  if not next_due or due < next_due then next_due = due end
end
if next_due then
  redis.call('ZADD', K_DUE, ms_str(next_due), CHANNEL)
else
  redis.call('ZREM', K_DUE, CHANNEL)
end
return {promoted, reaped, dropped, next_wake(), now}
