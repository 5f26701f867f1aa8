-- sliding_log.lua: one sliding-log decision, or a refund. The key holds one entry per event of
-- the last period, so the count is exact; a denied call adds nothing, and the set never holds more
-- than limit entries.
--
-- KEYS[1]  the limiter key, a sorted set: members "<ts_us>:<seq>", scored by ts_us
-- ARGV[1]  limit: events per period (integer >= 1)
-- ARGV[2]  period in microseconds (integer >= 1)
-- ARGV[3]  cost n: n > 0 takes n events (the caller checks n <= limit); n < 0 removes the -n
--          newest entries
-- ARGV[4]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- Returns {allowed (1|0), remaining, retry_after_us, reset_after_us}
--   retry_after_us  0 when allowed, else how long until enough entries leave the window
--   reset_after_us  how long until the newest entry leaves the window
--
-- The window is (now - period, now]: an entry stamped ts counts until now >= ts + period.

local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local now = now_us(ARGV[4])
local key = KEYS[1]

redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - period))
local count = redis.call('ZCARD', key)

local allowed, retry = 1, 0
if n < 0 then
  if count > 0 then
    count = count - #redis.call('ZPOPMAX', key, -n) / 2
  end
elseif count + n <= limit then
  local ts = string.format('%d', now)
  local seq = count
  local added = 0
  if n == 1 then -- the common case, without building an argument table
    seq = seq + 1
    added = redis.call('ZADD', key, ts, ts .. ':' .. seq)
  end
  while added < n do
    local args = {}
    for _ = 1, math.min(n - added, 200) do
      seq = seq + 1
      args[#args + 1] = ts
      args[#args + 1] = ts .. ':' .. seq
    end
    -- a member already there (same microsecond after a refund) adds nothing: go round again
    added = added + redis.call('ZADD', key, unpack(args))
  end
  redis.call('PEXPIRE', key, math.ceil(period / 1000))
  count = count + n
else
  allowed = 0
  -- the (count + n - limit)-th oldest entry has to leave first
  local e = redis.call('ZRANGE', key, count + n - limit - 1, count + n - limit - 1, 'WITHSCORES')
  retry = tonumber(e[2]) + period - now
  if retry < 1 then retry = 1 end
end

local reset = 0
if allowed == 1 and n > 0 then
  reset = period -- the newest entries are this call's
elseif count > 0 then
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  reset = tonumber(last[2]) + period - now
end
return {allowed, math.max(limit - count, 0), retry, reset}
