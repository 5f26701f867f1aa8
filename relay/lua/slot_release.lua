-- slot_release.lua: give back a slot taken with slot_take.lua, after the call (whatever its
-- outcome), and wake the endpoint's dispatchers and slot waiters, as a finished task does.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] member ('slot:' .. holder)
-- Returns 1 when the slot was freed, 0 when it was not held (released already, or freed at its
-- expiry).
local member = ARGV[8]
if redis.call('ZREM', K_SLOTS, member) == 0 then return 0 end
redis.call('ZREM', K_RUN, member)
redis.call('HINCRBY', K_COUNTS, 'slots_released', 1)
wake()
return 1
