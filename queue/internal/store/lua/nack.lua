-- nack.lua: a delivery failed. The job is tried again after retry_ms (or its backoff policy) while
-- tries are left, else it goes to the dead letter; no_retry sends it there at once.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: id; ARGV[8]: delivery; ARGV[9]: error text; ARGV[10]: retry_ms (-1: the job's backoff);
-- ARGV[11]: no_retry (0|1).
-- Returns: 'retried', 'dead' or 'expired' (ttl over before the next try); error replies
-- 'NOT_FOUND' or 'LEASE_LOST'.
local now = now_ms()
local id = ARGV[7]
local delivery = tonumber(ARGV[8])
local rec, why = take_lease(id, delivery, now)
if not rec then return redis.error_reply(string.upper(why)) end
end_lease(rec, delivery)
count('nacked', 1)
local outcome
if ARGV[11] == '1' then
  to_dead(id, rec, now, ARGV[9])
  outcome = 'dead'
else
  local delay = tonumber(ARGV[10])
  if delay < 0 then delay = backoff_ms(rec) end
  outcome = retry_or_dead(id, rec, now, delay, ARGV[9])
end
flush_notify()
return outcome
