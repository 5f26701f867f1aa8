-- schedule_claim.lua: claim the queues whose schedules are due, from one shard of the due index
-- (a library of its own: no lib.lua). The index is a hint: a queue's score is never later than its
-- earliest due schedule (the scripts that make a schedule due earlier lower it, and a scheduler
-- raises it only when no such change came in between: schedule_settle.lua).
-- KEYS[1] the shard's zset (queue "ns:q" -> when to visit it, ms), KEYS[2] the shard's hash of
-- generations (queue -> count of changes that lowered its score).
-- ARGV[1] the most queues to claim, ARGV[2] the claim's lease (ms), ARGV[3] the lookahead (ms; absent:
-- 0): a queue due within it is claimed already, so its ticks can be published ahead, due at them.
-- Returns {now, earliest score left after the claim (-1: none), then per claimed queue: member,
-- generation ('' for none)}. A claimed queue's score moves to now + lease, so the other schedulers
-- leave it alone while this one works on it, and take it over if this one dies.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local horizon = now + tonumber(ARGV[3] or '0')
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', horizon, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {now, -1}
if #members > 0 then
  local until_ms = string.format('%d', now + tonumber(ARGV[2]))
  local gens = redis.call('HMGET', KEYS[2], unpack(members))
  for i, m in ipairs(members) do
    redis.call('ZADD', KEYS[1], until_ms, m)
    out[#out + 1] = m
    out[#out + 1] = gens[i] or ''
  end
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then out[2] = tonumber(first[2]) end
return out
