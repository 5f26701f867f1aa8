-- release.lua: a visitor leaves: its slot is freed at once, or it leaves the line.
-- KEYS: the room keys (lib.lua).
-- ARGV[1] visitor id
-- Returns 1 a slot was freed, 2 the visitor left the line, 0 it held neither, -1 no such room.
if redis.call('EXISTS', K_CONFIG) == 0 then return -1 end
local v = ARGV[1]
if redis.call('ZREM', K_ACTIVE, v) == 1 then
  redis.call('HINCRBY', K_STATS, 'released', 1)
  return 1
end
if redis.call('ZREM', K_LINE, v) == 1 then
  redis.call('ZREM', K_SEEN, v)
  redis.call('HDEL', K_SINCE, v)
  return 2
end
return 0
