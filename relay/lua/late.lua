-- late.lua: remember offline calls that started late, so that the rate limit holds as the
-- endpoint sees it. Calls are due every 1/qps on Redis's clock; a call that starts L ms after
-- its due time (sa) counts, at the endpoint, in the one-second window that starts with it, which
-- reaches L ms into the next second. So the span [sa + 1s, sa + 1s + L) is held: take.lua starts
-- no call in it, and the calls of the next second cannot bunch up behind the late one.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] n, then n pairs: task id, how late its call started (ms, may be fractional)
-- Returns the number of spans held.
local now = now_ms()
local n = tonumber(ARGV[8])
local held, last = 0, 0
for i = 0, n - 1 do
  local id, late = ARGV[9 + 2 * i], tonumber(ARGV[10 + 2 * i])
  local sa = tonumber(redis.call('HGET', task_key(id), 'sa') or '')
  if sa and late and late > 0 then
    -- sa is the due time rounded down: the span starts no later and ends 1 ms later than exact.
    local hs, he = sa + 1000, sa + 1001 + late
    local cur = tonumber(redis.call('ZSCORE', K_HOLD, hs) or '0')
    if he > cur then redis.call('ZADD', K_HOLD, he, hs) end
    last = math.max(last, he)
    held = held + 1
  end
end
if held > 0 then
  -- Spans that ended are of no use; a bound keeps a flood of reports small.
  redis.call('ZREMRANGEBYSCORE', K_HOLD, '-inf', now - 1000)
  if redis.call('ZCARD', K_HOLD) > 1000 then redis.call('ZREMRANGEBYRANK', K_HOLD, 0, -1001) end
  local need = math.ceil(last - now) + 1000
  if redis.call('PTTL', K_HOLD) < need then redis.call('PEXPIRE', K_HOLD, need) end
end
return held
