-- release.lua: a visitor leaves: its slot is freed at once, or it leaves the line.
-- KEYS: the room keys (lib.lua).
-- ARGV[1] visitor id
-- A freed slot's visitor is marked released (KEYS[10], lib.lua): touch.lua refuses its passes,
-- so a client that keeps the pass cookie after the release does not get a slot back, even a free
-- one, and arrive.lua answers its arrivals "left" for the left window.
-- Returns 1 a slot was freed, 2 the visitor left the line, 0 it held neither, -1 no such room.
local cfg = read_config()
if not cfg then return -1 end
local v = ARGV[1]
if redis.call('ZREM', K_ACTIVE, v) == 1 then
  redis.call('HINCRBY', K_STATS, 'released', 1)
  local now = now_ms()
  local keep = cfg.session_timeout + RELEASED_REFUSED_MS
  -- Marks past their use go a hundred at a time: a call stays short after a rush of releases.
  local stale = redis.call('ZRANGEBYSCORE', K_RELEASED, '-inf', string.format('%d', now - keep), 'LIMIT', 0, 100)
  if #stale > 0 then redis.call('ZREM', K_RELEASED, unpack(stale)) end
  redis.call('ZADD', K_RELEASED, string.format('%d', now), v)
  redis.call('PEXPIRE', K_RELEASED, keep)
  return 1
end
if redis.call('ZREM', K_LINE, v) == 1 then
  redis.call('ZREM', K_SEEN, v)
  redis.call('HDEL', K_SINCE, v)
  return 2
end
return 0
