-- release: give up a key's load lock (the loader failed or panicked) so another caller can load.
--
-- KEYS[1]  record key
-- ARGV[1]  owner token of the load
-- ARGV[2]  channel to publish on (wakes waiters so one of them takes over)
--
-- Returns 1 when the lock was released, 0 when the caller no longer held it.
local rec = redis.call('GET', KEYS[1])
if not rec then
  return 0
end
local state, refresh, lock, owner = string.match(rec, '^([vne])|(%d+)|(%d+)|([^|]*)|')
if owner ~= ARGV[1] then
  return 0
end
if state == 'e' then
  redis.call('DEL', KEYS[1])
else
  local payload = string.sub(rec, #state + #refresh + #lock + #owner + 5)
  redis.call('SET', KEYS[1], state .. '|' .. refresh .. '|0||' .. payload, 'KEEPTTL')
end
redis.call('PUBLISH', ARGV[2], '')
return 1
