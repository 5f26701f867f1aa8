-- set: write a value through (the caller knows it is the latest), fencing loads in flight.
--
-- KEYS[1]  record key
-- ARGV[1]  state: 'v' (value) or 'n' (not-found marker)
-- ARGV[2]  payload (empty for 'n')
-- ARGV[3]  TTL in ms (jitter already applied)
-- ARGV[4]  ms after which a reader starts a background reload (refresh-ahead; 0: never)
-- ARGV[5]  channel to publish the write on (wakes waiters)
--
-- Returns now_ms.
local now = now_ms()
store(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), now, ARGV[5])
return now
