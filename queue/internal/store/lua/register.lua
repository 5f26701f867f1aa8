-- register.lua: add a queue to its namespace's registry unless the namespace holds its quota of
-- queues already. A queue registered before is always accepted (a repeat of a call that added it
-- answers as the first did).
--
-- KEYS[1]  the namespace's queue set
-- ARGV[1]  the queue name
-- ARGV[2]  the namespace's most queues (0: no quota)
-- Returns: 1 registered (now or before), -1 the quota is reached (nothing changed).
local quota = tonumber(ARGV[2])
local known = redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1
if not known and quota > 0 and redis.call('SCARD', KEYS[1]) >= quota then
  return -1
end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
