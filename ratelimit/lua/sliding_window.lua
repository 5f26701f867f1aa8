-- sliding_window.lua: one sliding-window-counter decision, or a refund. The count in the last
-- period is estimated from two clock-aligned fixed windows: the current one in full, plus the
-- previous one weighted by how much of it the sliding window still covers.
--
-- KEYS[1]  the limiter key, a string "<window_index>:<current_count>:<previous_count>", where
--          window_index = floor(now / period). Absent = nothing counted.
-- ARGV[1]  limit: events per period (integer >= 1)
-- ARGV[2]  period in microseconds (integer >= 1)
-- ARGV[3]  cost n: n > 0 takes n events (the caller checks n <= limit); n < 0 gives -n back
--          (from the current window first, then the previous one)
-- ARGV[4]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- Returns {allowed (1|0), remaining, retry_after_us, reset_after_us}
--   retry_after_us  0 when allowed, else how long until the estimate leaves room for n
--   reset_after_us  how long until the estimate is back to 0
--
-- The estimate, times period, is previous*(period - elapsed) + current*period: integers only.
-- The caller checks limit*period <= 2^53.

local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local now = now_us(ARGV[4])

local idx = fdiv(now, period)
local elapsed = now - idx * period
local cur, prev = 0, 0
local same = false -- the key is already this window's, with its TTL
local raw = redis.call('GET', KEYS[1])
if raw then
  local s1 = string.find(raw, ':', 1, true)
  local s2 = s1 and string.find(raw, ':', s1 + 1, true)
  local w, c, p
  if s2 then
    w = tonumber(string.sub(raw, 1, s1 - 1))
    c = tonumber(string.sub(raw, s1 + 1, s2 - 1))
    p = tonumber(string.sub(raw, s2 + 1))
  end
  if w == idx then
    cur, prev, same = c, p, true
  elseif w == idx - 1 then
    cur, prev = 0, c
  end
end

local allowed, retry = 1, 0
if n < 0 then
  local back = -n
  local fromCur = math.min(cur, back)
  cur = cur - fromCur
  prev = math.max(prev - (back - fromCur), 0)
elseif prev * (period - elapsed) + (cur + n) * period <= limit * period then
  cur = cur + n
else
  allowed = 0
  local room = limit - cur - n
  if room >= 0 then
    -- later in this window, once the previous window's weight has dropped enough
    retry = period - fdiv(room * period, prev) - elapsed
  else
    -- in the next window, where this window's count becomes the weighted one
    local wait = 0
    if cur > limit - n then wait = period - fdiv((limit - n) * period, cur) end
    retry = period - elapsed + wait
  end
  if retry < 1 then retry = 1 end
end

local reset = 0
if cur > 0 then reset = 2 * period - elapsed elseif prev > 0 then reset = period - elapsed end

if allowed == 1 then
  if cur == 0 and prev == 0 then
    redis.call('DEL', KEYS[1])
  else
    local v = string.format('%d:%d:%d', idx, cur, prev)
    if same then
      redis.call('SET', KEYS[1], v, 'KEEPTTL')
    else
      -- the state matters until the end of the next window
      redis.call('SET', KEYS[1], v, 'PX', math.ceil((2 * period - elapsed) / 1000))
    end
  end
end

local remaining = fdiv(limit * period - prev * (period - elapsed) - cur * period, period)
if remaining < 0 then remaining = 0 end
return {allowed, remaining, retry, reset}
