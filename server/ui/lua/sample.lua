-- sample.lua: record a queue's cumulative counters as the sample of the current minute (the
-- first sample of a minute wins, so several servers sampling the same queue agree), and drop the
-- samples older than the window. The hash holds at most window+2 fields and expires when nobody
-- samples it any more.
--
-- KEYS[1]  the queue's sample hash (field: minute since the epoch, value: "published:acked")
-- ARGV[1]  published counter
-- ARGV[2]  acked counter
-- ARGV[3]  window in minutes (samples older than that are dropped)
-- ARGV[4]  TTL of the hash in seconds
-- Returns: the current minute (Redis TIME).
local t = redis.call('TIME')
local minute = math.floor(tonumber(t[1]) / 60)
if redis.call('HSETNX', KEYS[1], minute, ARGV[1] .. ':' .. ARGV[2]) == 1 then
  local oldest = minute - tonumber(ARGV[3])
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    if tonumber(f) == nil or tonumber(f) < oldest then
      redis.call('HDEL', KEYS[1], f)
    end
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return minute
