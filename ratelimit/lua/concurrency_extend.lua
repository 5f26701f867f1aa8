-- concurrency_extend.lua: move a held lease's expiry to now + lease.
--
-- KEYS[1]  the semaphore, a sorted set: lease ids scored by their expiry in microseconds
-- ARGV[1]  the lease id
-- ARGV[2]  the new lease length in microseconds, from now (integer >= 1)
-- ARGV[3]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- Returns 1 when the lease was held and is extended, 0 when it had expired or was released
-- (an expired lease is never revived: its slot may already be someone else's).

local key = KEYS[1]
local lease = tonumber(ARGV[2])
local now = now_us(ARGV[3])

redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
if not redis.call('ZSCORE', key, ARGV[1]) then
  return 0
end
redis.call('ZADD', key, 'XX', string.format('%d', now + lease), ARGV[1])
expire_with_last_lease(key, now)
return 1
