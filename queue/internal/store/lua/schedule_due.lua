-- schedule_due.lua: read the schedules of a queue that are due (a library of its own: no lib.lua).
-- KEYS[1] the queue's due zset of schedules, KEYS[2] the prefix of its schedules' hashes (the hash
-- of schedule s is KEYS[2]..s, same hash tag, so the same slot).
-- ARGV[1] the most schedules to return.
-- Returns {now (ms, Redis's TIME), earliest next run left after these (-1: none), then per due
-- schedule: name, and its hash as a flat field/value array}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local names = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
local out = {now, -1}
local after = redis.call('ZRANGE', KEYS[1], #names, #names, 'WITHSCORES')
if after[2] then out[2] = tonumber(after[2]) end
for _, name in ipairs(names) do
  out[#out + 1] = name
  out[#out + 1] = redis.call('HGETALL', KEYS[2] .. name)
end
return out
