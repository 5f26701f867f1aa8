-- delete: invalidate a key and fence every load in flight for it (their write-back is refused,
-- because the owner they hold is gone).
--
-- KEYS[1]  record key
-- ARGV[1]  'strong': remove the record; 'eventual': keep the value but mark it stale (refresh_at
--          = 1) and unlocked, so readers get it while one of them reloads
-- ARGV[2]  channel to publish on (wakes waiters)
--
-- Returns 1 when a record was changed, 0 when there was none.
local rec = redis.call('GET', KEYS[1])
if not rec then
  return 0
end
local state, refresh, lock, owner = string.match(rec, '^([vne])|(%d+)|(%d+)|([^|]*)|')
if ARGV[1] == 'strong' or not state or state == 'e' then
  redis.call('DEL', KEYS[1])
else
  local payload = string.sub(rec, #state + #refresh + #lock + #owner + 5)
  redis.call('SET', KEYS[1], state .. '|1|0||' .. payload, 'KEEPTTL')
end
redis.call('PUBLISH', ARGV[2], '')
return 1
