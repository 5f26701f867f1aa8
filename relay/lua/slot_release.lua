-- slot_release.lua: give back slots taken with slot_take.lua after their calls (whatever the
-- outcome), and wake the endpoint's dispatchers and slot waiters, as a finished task does.
-- Concurrent releases of one endpoint are combined into one call.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] n, then n members ('slot:' .. holder)
-- Returns per member 1 when its slot was freed, 0 when it was not held (released already, or
-- freed at its expiry).
local n = tonumber(ARGV[8])
local out, freed = {}, 0
for i = 1, n do
  local member = ARGV[8 + i]
  if redis.call('ZREM', K_SLOTS, member) == 1 then
    redis.call('ZREM', K_RUN, member)
    freed = freed + 1
    out[i] = 1
  else
    out[i] = 0
  end
end
if freed > 0 then
  redis.call('HINCRBY', K_COUNTS, 'slots_released', freed)
  wake()
end
return out
