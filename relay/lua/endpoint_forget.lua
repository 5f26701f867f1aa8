-- endpoint_forget.lua: stop maintaining a deleted endpoint once it holds no task, unless it was
-- created again meanwhile or changed within the grace: a Client whose cached settings predate the
-- deletion may still submit to it, and maintenance must see such tasks to cancel them.
-- KEYS[1] settings hash  KEYS[2] known zset (endpoint_set.lua: name -> last change, ms)
-- KEYS[3] deleted zset (endpoint_set.lua)
-- ARGV[1] name  ARGV[2] grace (ms)
-- Returns 1 when forgotten.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local changed = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '0')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now - changed < tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[3], ARGV[1])
return redis.call('ZREM', KEYS[2], ARGV[1])
