-- schedule_index.lua: name a schedule in its namespace's index (name -> queue) unless the
-- namespace holds its quota of schedules already (a library of its own: no lib.lua). A schedule
-- named before is always accepted (a replace, or a repeat of a call that named it answers as the
-- first did).
--
-- KEYS[1]  the namespace's hash of schedules (name -> queue)
-- ARGV[1]  the schedule's name
-- ARGV[2]  its queue
-- ARGV[3]  the namespace's most schedules (0: no quota)
-- Returns: 1 named (now or before), -1 the quota is reached (nothing changed).
local quota = tonumber(ARGV[3])
if quota > 0 and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= quota then
  return -1
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
