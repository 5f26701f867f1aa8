-- fixed_window.lua: one fixed-window decision, or a refund.
--
-- KEYS[1]  the limiter key, a string "<window_start_us>:<count>". Absent = no window yet.
-- ARGV[1]  limit: events per window (integer >= 1)
-- ARGV[2]  window length (period) in microseconds (integer >= 1)
-- ARGV[3]  aligned: 1 = windows start at multiples of the period since the Unix epoch,
--          0 = a window starts with the first event after the previous one ended
-- ARGV[4]  cost n: n > 0 takes n events (the caller checks n <= limit); n < 0 gives -n back to
--          the current window
-- ARGV[5]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- The key expires when its window ends (set when the window starts; later writes keep it).
--
-- Returns {allowed (1|0), remaining, retry_after_us, reset_after_us}
--   retry_after_us  0 when allowed, else the time until the window ends
--   reset_after_us  the time until the window ends (0 when there is no window)

local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local aligned = ARGV[3] == '1'
local n = tonumber(ARGV[4])
local now = now_us(ARGV[5])

local start, count
local raw = redis.call('GET', KEYS[1])
if raw then
  local sep = string.find(raw, ':', 1, true)
  if sep then
    start, count = tonumber(string.sub(raw, 1, sep - 1)), tonumber(string.sub(raw, sep + 1))
  end
end

-- roll to the window that holds now; a new window gets a TTL, later writes keep it
local fresh = false
if aligned then
  local q = fdiv(now, period)
  if start ~= q * period then start, count, fresh = q * period, 0, true end
elseif not start or now >= start + period or now < start then
  start, count, fresh = nil, 0, true
end

if n < 0 then
  if not start or count == 0 then
    return {1, limit, 0, start and (start + period - now) or 0}
  end
  count = math.max(count + n, 0)
else
  if count + n > limit then
    return {0, math.max(limit - count, 0), start + period - now, start + period - now}
  end
  start = start or now
  count = count + n
end

local left = start + period - now
if fresh then
  redis.call('SET', KEYS[1], string.format('%d:%d', start, count), 'PX', math.ceil(left / 1000))
else
  redis.call('SET', KEYS[1], string.format('%d:%d', start, count), 'KEEPTTL')
end
return {1, math.max(limit - count, 0), 0, left}
