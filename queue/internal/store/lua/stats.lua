-- stats.lua: queue depths and counters, in O(number of priorities in use) — never O(jobs).
-- KEYS: the queue keys (lib.lua).
-- The oldest ready job is the one that has waited longest at the head of a line (each priority's
-- and the callback lane's head: one LINDEX each, and one HMGET of their records, decoded only up
-- to their publish and due times); its age is now less when it became ready (its due time, or its
-- publish time when later), 0 when nothing is ready.
-- Returns: {ready (callback lane included), delayed, leased, dead, done, paused (0|1), oldest ready
-- job's age (ms), counter name, value, ...}; the counters include the processing-time histogram's
-- 'pt:<bucket>' fields (lib.lua, ack_times).
local heads = {}
local function head(list)
  local id = redis.call('LINDEX', list, '0')
  if id then heads[#heads + 1] = id end
  return redis.call('LLEN', list)
end
local ready = head(callbacks_key())
for _, p in ipairs(redis.call('ZRANGE', K_PRIOS, 0, -1)) do
  ready = ready + head(K_READY .. p)
end
local oldest = 0
if #heads > 0 then
  local now = now_ms()
  for _, raw in ipairs(redis.call('HMGET', K_JOBS, unpack(heads))) do
    if raw then oldest = math.max(oldest, now - ready_since(raw)) end
  end
end
local paused = 0
if redis.call('HGET', K_META, 'paused') == '1' then paused = 1 end
local out = {ready, redis.call('ZCARD', K_DELAYED), redis.call('ZCARD', K_LEASED),
  redis.call('ZCARD', K_DEAD), redis.call('ZCARD', K_DONE), paused, oldest}
local counters = redis.call('HGETALL', K_STATS)
for i = 1, #counters do out[#out + 1] = counters[i] end
return out
