-- sample.lua: record a queue's cumulative counters as the sample of the current minute in the
-- hour's hash and of the current slot (ARGV[6] seconds) in the day's hash (the first sample of a
-- minute or slot wins, so several servers sampling the same queue agree), and drop the samples
-- older than each window. The hashes hold at most window+2 and day slots+2 fields, and expire
-- when nobody samples them any more.
--
-- KEYS[1]  the queue's hour hash (field: minute since the epoch, value: "published:acked:failed")
-- KEYS[2]  the queue's day hash (field: slot since the epoch, same value)
-- ARGV[1]  published counter
-- ARGV[2]  acked counter
-- ARGV[3]  failed counter
-- ARGV[4]  hour window in minutes (older samples are dropped)
-- ARGV[5]  TTL of the hour hash in seconds
-- ARGV[6]  seconds in a slot of the day hash
-- ARGV[7]  slots in the day window
-- ARGV[8]  TTL of the day hash in seconds
-- Returns: the current minute (Redis TIME).
local t = tonumber(redis.call('TIME')[1])
local value = ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[3]
local function record(key, slot, keep, ttl)
  if redis.call('HSETNX', key, slot, value) == 1 then
    local oldest = slot - keep
    for _, f in ipairs(redis.call('HKEYS', key)) do
      if tonumber(f) == nil or tonumber(f) < oldest then
        redis.call('HDEL', key, f)
      end
    end
  end
  redis.call('EXPIRE', key, ttl)
end
local minute = math.floor(t / 60)
record(KEYS[1], minute, tonumber(ARGV[4]), ARGV[5])
record(KEYS[2], math.floor(t / tonumber(ARGV[6])), tonumber(ARGV[7]), ARGV[8])
return minute
