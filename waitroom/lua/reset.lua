-- reset.lua: empty a room (every admitted and waiting visitor and the counters go), or, with
-- ARGV[1] = 1, delete it with its settings.
-- KEYS: the room keys (lib.lua).
-- ARGV[1] 1 to delete the settings as well, 0 to keep them
-- Returns 1 when the room existed, 0 otherwise.
local existed = redis.call('EXISTS', K_CONFIG)
redis.call('DEL', K_ACTIVE, K_LINE, K_SEEN, K_SINCE, K_STATS, K_MINUTES, K_WAITS, K_RELEASED)
redis.call('ZREM', K_DUE, room_name())
if ARGV[1] == '1' then redis.call('DEL', K_CONFIG) end
return existed
