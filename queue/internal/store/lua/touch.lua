-- touch.lua: extend a lease to now + ttr.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: id; ARGV[8]: delivery; ARGV[9]: ttr_ms (0: the job's own ttr).
-- Returns: the new lease end (ms); error replies 'NOT_FOUND' or 'LEASE_LOST'.
local now = now_ms()
local id = ARGV[7]
local rec, why = check_lease(id, tonumber(ARGV[8]), now)
if not rec then return redis.error_reply(string.upper(why)) end
local ttr = tonumber(ARGV[9])
if ttr <= 0 then ttr = rec[R_TTR] end
redis.call('ZADD', K_LEASED, ms_str(now + ttr), id)
return now + ttr
