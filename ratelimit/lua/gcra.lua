-- gcra.lua: one GCRA (generic cell rate algorithm, the token bucket kept as one timestamp)
-- decision, or a refund.
--
-- KEYS[1]  the limiter key, a string "<tat_us>:<tat_rem>:<expiry_ms>": the theoretical arrival
--          time tat = tat_us + tat_rem/rate microseconds (kept exact in integers), and when the
--          key expires (script time, ms). Absent = full bucket. The key lives at least until the
--          bucket is full again; its TTL is set with that much again to spare, so most writes
--          keep it (KEEPTTL, cheaper than setting a new one).
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
-- exact integer in a Lua number (a double); each division is corrected to the exact floor or
-- ceiling. (Inlined rather than in helper functions: this is the hot path.)

local rate = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local now = now_us(ARGV[5])
local floor = math.floor

-- debt: how far tat is ahead of now (0 when the bucket is full).
local debt, expiry = 0, 0
local raw = redis.call('GET', KEYS[1])
if raw then
  local s1 = string.find(raw, ':', 1, true)
  local s2 = s1 and string.find(raw, ':', s1 + 1, true)
  if s2 then
    debt = (tonumber(string.sub(raw, 1, s1 - 1)) - now) * rate + tonumber(string.sub(raw, s1 + 1, s2 - 1))
    if debt < 0 then debt = 0 end
    expiry = tonumber(string.sub(raw, s2 + 1))
  end
end

local tolerance = burst * period
local new = debt + n * period
if new < 0 then new = 0 end
local allowed, retry = 1, 0
if n > 0 and new > tolerance then
  -- denied: nothing is written
  allowed = 0
  local over = new - tolerance
  retry = floor(over / rate)
  if retry * rate < over then retry = retry + 1 end
  new = debt
else
  -- tat = now + new/rate µs, kept as whole µs plus a remainder in 1/rate µs
  local ahead = floor(new / rate)
  if ahead * rate > new then ahead = ahead - 1 elseif (ahead + 1) * rate <= new then ahead = ahead + 1 end
  if new == 0 then
    redis.call('DEL', KEYS[1])
  else
    local nowMS = floor(now / 1000)
    local full = floor((now + ahead) / 1000) + 1 -- ms by which the bucket is full again
    if full <= expiry then
      redis.call('SET', KEYS[1], string.format('%d:%d:%d', now + ahead, new - ahead * rate, expiry), 'KEEPTTL')
    else
      expiry = full + floor(tolerance / rate / 1000) + 1
      redis.call('SET', KEYS[1], string.format('%d:%d:%d', now + ahead, new - ahead * rate, expiry), 'PX', expiry - nowMS)
    end
  end
end

local reset = floor(new / rate)
if reset * rate < new then reset = reset + 1 end
-- (remaining is clamped: a key may hold more than a lowered limit allows)
local room = tolerance - new
local remaining = floor(room / period)
if remaining * period > room then remaining = remaining - 1 end
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry, reset}
