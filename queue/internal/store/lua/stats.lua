-- stats.lua: queue depths and counters, in O(number of priorities in use) — never O(jobs).
-- KEYS: the queue keys (lib.lua).
-- Returns: {ready (callback lane included), delayed, leased, dead, done, paused (0|1), counter name, value, ...}.
local ready = redis.call('LLEN', callbacks_key())
for _, p in ipairs(redis.call('ZRANGE', K_PRIOS, 0, -1)) do
  ready = ready + redis.call('LLEN', K_READY .. p)
end
local paused = 0
if redis.call('HGET', K_META, 'paused') == '1' then paused = 1 end
local out = {ready, redis.call('ZCARD', K_DELAYED), redis.call('ZCARD', K_LEASED),
  redis.call('ZCARD', K_DEAD), redis.call('ZCARD', K_DONE), paused}
local counters = redis.call('HGETALL', K_STATS)
for i = 1, #counters do out[#out + 1] = counters[i] end
return out
