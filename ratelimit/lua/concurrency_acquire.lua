-- concurrency_acquire.lua: take a lease on a leased semaphore if fewer than limit are held.
--
-- KEYS[1]  the semaphore, a sorted set: lease ids scored by their expiry in microseconds
-- ARGV[1]  limit: leases held at once (integer >= 1)
-- ARGV[2]  lease length in microseconds (integer >= 1)
-- ARGV[3]  the new lease id
-- ARGV[4]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- Returns {acquired (1|0), held, wait_us}
--   held     leases held after the call (expired ones are dropped first)
--   wait_us  0 when acquired, else how long until the earliest lease expires
--
-- The key lives until its last lease expires, so leases whose holders died clean themselves up.
-- A call that arrives twice (the client resent it after losing the reply) finds its own lease id
-- held and answers acquired again, rather than "full" to a caller that holds a lease.

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local now = now_us(ARGV[4])

redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
local held = redis.call('ZCARD', key)
if redis.call('ZSCORE', key, ARGV[3]) then return {1, held, 0} end
if held >= limit then
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, held, tonumber(first[2]) - now}
end

redis.call('ZADD', key, string.format('%d', now + lease), ARGV[3])
expire_with_last_lease(key, now)
return {1, held + 1, 0}
