-- schedule_pause.lua: pause or resume one schedule (a library of its own: no lib.lua).
-- KEYS[1] the schedule's hash, KEYS[2] the queue's due zset of schedules.
-- ARGV[1] name, ARGV[2] paused (0|1), ARGV[3] next run when resuming (ms; -1: none).
-- Returns 0 when the schedule does not exist, else 1. Pausing takes the schedule out of the due
-- zset (no tick fires while paused, and none is counted missed); resuming puts it back at the
-- next run the caller computed from now, so the ticks of the pause are not caught up.
local k, due, name = KEYS[1], KEYS[2], ARGV[1]
if redis.call('EXISTS', k) == 0 then return 0 end
if ARGV[2] == '1' then
  redis.call('HSET', k, 'paused', '1')
  redis.call('ZREM', due, name)
  return 1
end
if redis.call('HGET', k, 'paused') == '0' then return 1 end
redis.call('HSET', k, 'paused', '0', 'next_run', ARGV[3])
if ARGV[3] ~= '-1' then redis.call('ZADD', due, ARGV[3], name) end
return 1
