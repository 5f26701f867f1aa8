-- maintain.lua: one housekeeping step of a room: frees the slots of admitted visitors idle for
-- session_timeout and removes the waiting visitors silent for queue_timeout (they abandoned the
-- line), each a bounded batch, and trims the per-minute counters. Then it sets the room's entry in
-- the due index (KEYS[9]) to the time its next visitor goes idle or silent (now or earlier when a
-- batch left some), or removes it when the room holds nobody: a pass visits only rooms with
-- something due.
-- KEYS: the room keys (lib.lua).
-- ARGV[1] batch: the most visitors of each kind removed by this call
-- Returns {freed, abandoned}, or {-1, 0} when the room does not exist.
local cfg = read_config()
if not cfg then
  redis.call('ZREM', K_DUE, room_name())
  return {-1, 0}
end
local now = now_ms()
local batch = tonumber(ARGV[1])
local freed = free_idle(cfg, now, batch)
local gone = redis.call('ZRANGEBYSCORE', K_SEEN, '-inf', now - cfg.queue_timeout, 'LIMIT', 0, batch)
if #gone > 0 then
  call_each('ZREM', K_LINE, gone)
  call_each('ZREM', K_SEEN, gone)
  call_each('HDEL', K_SINCE, gone)
  redis.call('HINCRBY', K_STATS, 'abandoned', #gone)
  redis.call('HINCRBY', K_MINUTES, 'x' .. math.floor(now / 60000), #gone)
end
trim_minutes(now)
due_set(K_DUE, room_name(), {{K_ACTIVE, cfg.session_timeout}, {K_SEEN, cfg.queue_timeout}})
return {freed, #gone}
