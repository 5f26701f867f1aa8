-- schedule_delete.lua: delete one schedule of a queue (a library of its own: no lib.lua).
-- KEYS[1] the schedule's hash, KEYS[2] the queue's due zset of schedules, KEYS[3] the queue's set
-- of schedule names.
-- ARGV[1] name.
-- Returns 1 when the schedule existed, 0 when not (a resend after a lost reply answers 0).
local existed = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
return existed
