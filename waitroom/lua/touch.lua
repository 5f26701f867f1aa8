-- touch.lua: an admitted visitor with a pass is still here. Keeps its slot alive; a visitor whose
-- slot is gone (freed by idle timeout, a release elsewhere or a reset) gets one back only when a
-- slot is free and nobody is waiting for it, so a touch never jumps the line or oversells.
-- KEYS: the room keys (lib.lua).
-- ARGV[1] visitor id
-- ARGV[2] batch: the most idle slots freed by this call
-- A visitor released lately (release.lua's mark) gets no slot back: its pass is refused.
-- Returns 1 the slot was held, 2 it was taken again, 0 no slot (the visitor must queue),
--         3 the visitor was released (its pass is refused), -1 no such room.
local cfg = read_config()
if not cfg then return -1 end
local now = now_ms()
local v = ARGV[1]
if redis.call('ZSCORE', K_ACTIVE, v) then
  redis.call('ZADD', K_ACTIVE, now, v)
  return 1
end
local released = redis.call('ZSCORE', K_RELEASED, v)
if released and tonumber(released) + cfg.session_timeout + RELEASED_REFUSED_MS > now then return 3 end
free_idle(cfg, now, tonumber(ARGV[2]))
if cfg.open_at <= now and redis.call('ZCARD', K_LINE) == 0
    and redis.call('ZCARD', K_ACTIVE) < cfg.max_active then
  redis.call('ZADD', K_ACTIVE, now, v)
  due_at(now + cfg.session_timeout)
  return 2
end
return 0
