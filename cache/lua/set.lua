-- set: write a value through (the caller knows it is the latest), fencing loads in flight.
--
-- KEYS[1]  record key
-- ARGV[1]  state: 'v' (value) or 'n' (not-found marker)
-- ARGV[2]  payload (empty for 'n')
-- ARGV[3]  TTL in ms (jitter already applied)
-- ARGV[4]  ms after which a reader starts a background reload (refresh-ahead; 0: never)
-- ARGV[5]  channel to publish the write on (wakes waiters)
--
-- Returns now_ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
local after = tonumber(ARGV[4])
local refresh = '0'
if after > 0 then
  refresh = string.format('%d', now + after)
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. refresh .. '|0||' .. ARGV[2], 'PX', ttl)
redis.call('PUBLISH', ARGV[5], '')
return now
