-- schedule_due.lua: read the schedules of a queue that are due (a library of its own: no lib.lua).
-- KEYS[1] the queue's due zset of schedules, KEYS[2] the prefix of its schedules' hashes (the hash
-- of schedule s is KEYS[2]..s, same hash tag, so the same slot).
-- ARGV[1] the most schedules to return, ARGV[2] the lookahead (ms; absent: 0): a schedule due within
-- it is returned already.
-- Returns {now (ms, Redis's TIME), earliest next run left after these (-1: none), then per due
-- schedule: name, and its hash as a flat field/value array}. A name whose hash is gone (a delete
-- that did not finish) leaves the zset here and is not returned.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local horizon = now + tonumber(ARGV[2] or '0')
local names = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', horizon, 'LIMIT', 0, limit)
local out = {now, -1}
for _, name in ipairs(names) do
  local h = redis.call('HGETALL', KEYS[2] .. name)
  if #h == 0 then
    redis.call('ZREM', KEYS[1], name)
  else
    out[#out + 1] = name
    out[#out + 1] = h
  end
end
if #names == limit then
  out[2] = now -- more may be due: look again at once
else
  local after = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. horizon, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if after[2] then out[2] = tonumber(after[2]) end
end
return out
