-- slot_take.lua: take endpoint concurrency slots, each with one token of the endpoint's rate
-- limit, for callers that make the call themselves (callbacks under the endpoint's target URL):
-- their calls then count against the endpoint's limits like tasks'. Concurrent takes of one
-- endpoint are combined into one call. A slot is a member of the running set (so take.lua and
-- the stats count it) and of the slots set, both scored with its expiry: a holder that dies frees
-- it then (reap_slots: here, in take.lua when the endpoint is full, and in maintain.lua). Slots
-- whose expiry passed are freed first.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] concurrency  [9] qps as take.lua spaces calls (0: no rate limit)  [10] burst
-- [11] lookahead (ms): tokens due within it are taken now, each with its delay
-- [12] window  [13] span (ms): as take.lua's ARGV[16] and [17]
-- [14] n, then n pairs: member ('slot:' .. holder), hold (ms: the slot frees itself this long
-- after the call's start)
-- Returns {Redis's time (µs), then per member: code, value}: code 0 the slot is taken, value the
-- delay (µs from Redis's time rounded down to the ms) to the call's start (a member already
-- holding a slot gets it again with its expiry renewed, no new token and no delay); code 1 the
-- rate limit has no token for it yet, value the ms until one is due; code 2 every slot is taken
-- (a wake-up on the endpoint's channel says when one frees), value 0.
local tm = redis.call('TIME')
local now_us = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local now = math.floor(now_us / 1000) -- as now_ms()
local n = tonumber(ARGV[14])
if reap_slots(now, 100) > 0 then wake() end
local out = {now_us}
local first_end -- the earliest expiry of a slot this call takes (due_at)
local fresh = {} -- indexes of the members that need a new slot
for i = 1, n do
  local member, hold = ARGV[13 + 2 * i], tonumber(ARGV[14 + 2 * i])
  if redis.call('ZSCORE', K_SLOTS, member) then
    redis.call('ZADD', K_SLOTS, now + hold, member)
    redis.call('ZADD', K_RUN, now + hold, member)
    out[2 * i], out[2 * i + 1] = 0, 0
  else
    fresh[#fresh + 1] = i
  end
end
if #fresh == 0 then return out end
local k = math.max(0, math.min(#fresh, tonumber(ARGV[8]) - redis.call('ZCARD', K_RUN)))
local tokens, next_token, interval
local qps = tonumber(ARGV[9])
local burst, lookahead = tonumber(ARGV[10]), tonumber(ARGV[11])
if qps > 0 and k > 0 then
  tokens, next_token, interval = rate_tokens(now, k, qps, burst, lookahead, tonumber(ARGV[12]), tonumber(ARGV[13]))
end
for j, i in ipairs(fresh) do
  local member, hold = ARGV[13 + 2 * i], tonumber(ARGV[14 + 2 * i])
  if j > k then
    out[2 * i], out[2 * i + 1] = 2, 0
  elseif tokens and j > #tokens then
    out[2 * i], out[2 * i + 1] = 1, math.max(1, math.ceil(next_token - lookahead - now))
  else
    local delay = 0
    if tokens then
      delay = math.max(0, tokens[j] - now)
      rate_log(member, tokens[j])
    end
    local expiry = now + delay + hold
    redis.call('ZADD', K_SLOTS, expiry, member)
    redis.call('ZADD', K_RUN, expiry, member)
    if not first_end or expiry < first_end then first_end = expiry end
    out[2 * i], out[2 * i + 1] = 0, math.floor(delay * 1000)
  end
end
if tokens and #tokens > 0 then rate_store(next_token, now, burst, interval) end
if first_end then due_at(first_end) end
return out
