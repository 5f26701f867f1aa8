-- schedule_lower.lua: ask for a queue's schedules to be visited no later than a time (a library of
-- its own: no lib.lua). Called before and after any change that may make a schedule due earlier
-- (create, replace, resume), so a scheduler's settle of a visit that began before the change
-- cannot push the visit back past it (schedule_settle.lua).
-- KEYS[1] the shard's zset, KEYS[2] the shard's hash of generations.
-- ARGV[1] the queue's member ("ns:q"), ARGV[2] the time (ms).
-- Returns 1.
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
