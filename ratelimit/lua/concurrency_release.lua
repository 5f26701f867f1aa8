-- concurrency_release.lua: give a lease back and wake the waiters.
--
-- KEYS[1]  the semaphore, a sorted set: lease ids scored by their expiry in microseconds
-- KEYS[2]  the wake-up channel (sharded pub/sub, same hash tag as KEYS[1])
-- ARGV[1]  the lease id
-- ARGV[2]  optional, tests only: "now" in microseconds; Redis TIME is used when absent
--
-- Returns 1 when the lease was held, 0 when it had expired or was already released.
-- Publishes on KEYS[2] whenever a slot was freed (by this release or by expired leases).

local key = KEYS[1]
local now = now_us(ARGV[2])

local expired = redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
local released = redis.call('ZREM', key, ARGV[1])
if released + expired > 0 then
  redis.call('SPUBLISH', KEYS[2], '1')
end
return released
