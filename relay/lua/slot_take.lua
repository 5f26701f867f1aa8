-- slot_take.lua: take one of an endpoint's concurrency slots and one token of its rate limit
-- together, for a caller that makes the call itself (a callback under the endpoint's target URL):
-- the call then counts against the endpoint's limits like a task's. The slot is a member of the
-- running set (so take.lua and the stats count it) and of the slots set, both scored with its
-- expiry: a holder that dies frees it then (reap_slots, here, in take.lua when full, and in
-- maintain.lua). Slots whose expiry passed are freed first.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] member ('slot:' .. holder)  [9] hold (ms): the slot frees itself this long after the
-- call's start  [10] concurrency  [11] qps as take.lua spaces calls (0: no rate limit)
-- [12] burst  [13] lookahead (ms): a token due within it is taken now, with its delay
-- Returns {0, delay (µs from Redis's time rounded down to the ms, to the call's start), Redis's
-- time (µs)} when the slot is taken (the holder already holding it gets it again, its expiry
-- renewed, with no new token); {1, ms} when the rate limit's next token is that far off; {2} when
-- every slot is taken (a wake-up on the endpoint's channel says when one frees).
local tm = redis.call('TIME')
local now_us = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local now = math.floor(now_us / 1000) -- as now_ms()
local member, hold = ARGV[8], tonumber(ARGV[9])
if reap_slots(now, 100) > 0 then wake() end
if redis.call('ZSCORE', K_SLOTS, member) then
  redis.call('ZADD', K_SLOTS, now + hold, member)
  redis.call('ZADD', K_RUN, now + hold, member)
  return {0, 0, now_us}
end
if tonumber(ARGV[10]) - redis.call('ZCARD', K_RUN) <= 0 then return {2} end
local delay = 0
local qps = tonumber(ARGV[11])
if qps > 0 then
  local burst, lookahead = tonumber(ARGV[12]), tonumber(ARGV[13])
  local tokens, next_token, interval = rate_tokens(now, 1, qps, burst, lookahead)
  if #tokens == 0 then return {1, math.max(1, math.ceil(next_token - lookahead - now))} end
  delay = math.max(0, tokens[1] - now)
  rate_store(next_token, now, burst, interval)
end
local expiry = now + delay + hold
redis.call('ZADD', K_SLOTS, expiry, member)
redis.call('ZADD', K_RUN, expiry, member)
return {0, math.floor(delay * 1000), now_us}
