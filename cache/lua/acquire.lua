-- acquire: take a key's load lock unless someone holds it or a usable value is cached.
-- Record format: <state>|<refresh_at>|<lock_until>|<owner>|<payload> (see record.go).
--
-- KEYS[1]  record key
-- ARGV[1]  owner token of the caller's load
-- ARGV[2]  lock TTL in ms
--
-- Returns {code, now_ms, record_or_false}, record being the record as it was before the call:
--   0  locked by another owner (the record may carry a value to serve meanwhile)
--   1  the lock is now the caller's (the record may carry a value that is due for a refresh)
--   2  a value or not-found marker is cached and not due for a refresh; nothing changed
local now = now_ms()
local ttl = tonumber(ARGV[2])
local untilms = string.format('%d', now + ttl)
local rec = redis.call('GET', KEYS[1])
local state, refresh, lock, owner
if rec then
  state, refresh, lock, owner = string.match(rec, '^([vne])|(%d+)|(%d+)|([^|]*)|')
end
if not state or state == 'e' then
  if state and tonumber(lock) > now and owner ~= ARGV[1] then
    return {0, now, rec}
  end
  redis.call('SET', KEYS[1], 'e|0|' .. untilms .. '|' .. ARGV[1] .. '|', 'PX', ttl)
  return {1, now, false}
end
if tonumber(lock) > now and owner ~= ARGV[1] then
  return {0, now, rec}
end
local r = tonumber(refresh)
if r == 0 or now < r then
  return {2, now, rec}
end
local payload = string.sub(rec, #state + #refresh + #lock + #owner + 5)
redis.call('SET', KEYS[1], state .. '|' .. refresh .. '|' .. untilms .. '|' .. ARGV[1] .. '|' .. payload, 'KEEPTTL')
return {1, now, rec}
