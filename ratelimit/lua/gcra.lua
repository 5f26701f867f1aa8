-- gcra.lua: one GCRA (generic cell rate algorithm, the token bucket kept as one timestamp)
-- decision, or a refund.
--
-- KEYS[1]  the limiter key, a string "<tat_us>:<tat_rem>": the theoretical arrival time
--          tat = tat_us + tat_rem/rate microseconds (kept exact in integers). Absent = full bucket.
-- ARGV[1]  rate: events per period (integer >= 1)
-- ARGV[2]  period in microseconds (integer >= 1)
-- ARGV[3]  burst: events allowed at once (integer >= 1)
-- ARGV[4]  cost n: n > 0 takes n events (the caller checks n <= burst); n < 0 gives -n back
-- ARGV[5]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- Returns {allowed (1|0), remaining, retry_after_us, reset_after_us}
--   remaining       events that could still be taken right now
--   retry_after_us  0 when allowed, else how long until n events fit
--   reset_after_us  how long until the bucket is full again
--
-- Arithmetic is in units of 1/rate microseconds, so one event costs exactly `period` units and
-- nothing is ever a fraction. The caller checks burst*period <= 2^53, so every value stays an
-- exact integer in a Lua number (a double).

local rate = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- floor(a / b) for integers held in doubles, exact even where a / b rounds.
local function fdiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b)
  return -fdiv(-a, b)
end

-- debt: how far tat is ahead of now (0 when the bucket is full).
local debt = 0
local raw = redis.call('GET', KEYS[1])
if raw then
  local us, rem = string.match(raw, '^(%-?%d+):(%d+)$')
  if us then
    debt = (tonumber(us) - now) * rate + tonumber(rem)
    if debt < 0 then debt = 0 end
  end
end

local tolerance = burst * period
local allowed = 1
local retry = 0
local new = debt + n * period
if new < 0 then new = 0 end
if n > 0 and new > tolerance then
  allowed = 0
  retry = cdiv(new - tolerance, rate)
  new = debt
end

if new ~= debt or n < 0 then
  if new == 0 then
    redis.call('DEL', KEYS[1])
  else
    local ahead = fdiv(new, rate)
    local ms = cdiv(cdiv(new, rate), 1000)
    redis.call('SET', KEYS[1], string.format('%d:%d', now + ahead, new - ahead * rate), 'PX', ms)
  end
end

-- (remaining is clamped: a key may hold more than a lowered limit allows)
return {allowed, math.max(fdiv(tolerance - new, period), 0), retry, cdiv(new, rate)}
