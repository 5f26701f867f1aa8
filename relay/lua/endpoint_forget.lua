-- endpoint_forget.lua: stop maintaining a deleted endpoint once it holds no task, unless it was
-- created again meanwhile.
-- KEYS[1] settings hash  KEYS[2] known zset (endpoint_set.lua)
-- ARGV[1] name
-- Returns 1 when forgotten.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
return redis.call('ZREM', KEYS[2], ARGV[1])
