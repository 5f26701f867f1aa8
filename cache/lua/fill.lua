-- fill: write a loaded value back, only if the caller's load still owns the key's lock. A Delete
-- (or Set, or a takeover after the lock expired) since the lock was taken clears or replaces the
-- owner, so a value read before the Delete can never be written after it.
--
-- KEYS[1]  record key
-- ARGV[1]  owner token of the load
-- ARGV[2]  state: 'v' (value) or 'n' (not-found marker)
-- ARGV[3]  payload (empty for 'n')
-- ARGV[4]  TTL in ms (jitter already applied)
-- ARGV[5]  ms after which a reader starts a background reload (refresh-ahead; 0: never)
-- ARGV[6]  channel to publish the write on (wakes waiters)
--
-- Returns {written, now_ms}: written is 1 when stored, 0 when fenced off.
local now = now_ms()
local rec = redis.call('GET', KEYS[1])
if not rec then
  return {0, now}
end
local owner = string.match(rec, '^[vne]|%d+|%d+|([^|]*)|')
if owner ~= ARGV[1] then
  return {0, now}
end
store(KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), now, ARGV[6])
return {1, now}
