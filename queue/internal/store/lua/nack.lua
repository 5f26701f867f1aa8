-- nack.lua: a delivery failed. The job is tried again after retry_ms (or its backoff policy) while
-- tries are left, else it goes to the dead letter; no_retry sends it there at once.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: id; ARGV[8]: delivery; ARGV[9]: error text; ARGV[10]: retry_ms (-1: the job's backoff);
-- ARGV[11]: no_retry (0|1); ARGV[12], only from a client that traces: the failed attempt's span
-- ('<delivery> <traceparent>'), kept in R_ATTEMPT for the next attempt's span to link to.
-- Returns: 'retried', 'dead' or 'expired' (ttl over before the next try); error replies
-- 'NOT_FOUND' or 'LEASE_LOST'.
local now = now_ms()
local id = ARGV[7]
local delivery = tonumber(ARGV[8])
local rec, why = take_lease(id, delivery, now)
if not rec then return redis.error_reply(string.upper(why)) end
rec[R_ATTEMPT] = ARGV[12]
local outcome = fail_delivery(id, rec, delivery, now, ARGV[9], ARGV[10], ARGV[11])
flush_notify()
return outcome
