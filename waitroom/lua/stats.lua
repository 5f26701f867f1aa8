-- stats.lua: a room's live figures. Reads only; O(1) apart from the 101 latest waits.
-- KEYS: the room keys (lib.lua).
-- Returns {exists (0|1), active, waiting, admitted_total, abandoned_total, released_total,
--          expired_total, recent_admitted, recent_abandoned, recent_window_ms, version, waits...}
local cfg = read_config()
if not cfg then return {0} end
local now = now_ms()
local s = redis.call('HMGET', K_STATS, 'admitted', 'abandoned', 'released', 'expired')
local admitted, window = recent('a', now)
local abandoned = recent('x', now)
local out = {1, redis.call('ZCARD', K_ACTIVE), redis.call('ZCARD', K_LINE),
  tonumber(s[1]) or 0, tonumber(s[2]) or 0, tonumber(s[3]) or 0, tonumber(s[4]) or 0,
  admitted, abandoned, window, cfg.version}
for _, w in ipairs(redis.call('LRANGE', K_WAITS, 0, -1)) do out[#out + 1] = tonumber(w) end
return out
