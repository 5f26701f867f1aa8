-- publish_ready.lua: add one job that is due now and has no ttl, unique key or callback: a lone
-- Publish of the common kind (a web handler scheduling one job), in the fewest steps. publish.lua
-- does the same for such jobs in batches, and everything for the others; both write the same record.
-- Runs only as a library function (Redis 7+, which has cmsgpack), and without lib.lua's bind: it
-- takes only the keys it touches, because every argument of a call costs Redis work before the
-- script starts (about as much as one HINCRBY for four keys).
-- KEYS[1] jobs, KEYS[2] the ready list of the job's priority, KEYS[3] prios, KEYS[4] stats (the
--   queue keys of lib.lua, the ready list named in full).
-- ARGV[1] notify channel; ARGV[2] id; ARGV[3] priority;
-- ARGV[4] the job's record before its published time (cmsgpack array header and fields R_STATE to
--   R_BMAX), ARGV[5] the record after its due time (R_LEASE to R_CALLBACK), both encoded by the
--   client (record.go) as cmsgpack encodes them; the script puts Redis's time between them.
-- Returns: {id, 0}, as publish.lua does for one job. Ids are made by the client per publish, so an
-- id already stored means this call is being sent again (a client retry after a lost reply): it
-- is answered the same and writes nothing.
local id, pri = ARGV[2], ARGV[3]
local now = now_ms()
-- R_PUBLISHED and R_DUE: a job due now is due at its publish time.
local record = ARGV[4] .. cmsgpack.pack(now, now) .. ARGV[5]
if redis.call('HSETNX', KEYS[1], id, record) == 1 then
  -- A push into an empty list adds the priority to prios and wakes consumers (push_ready).
  if redis.call('RPUSH', KEYS[2], id) == 1 then
    redis.call('ZADD', KEYS[3], pri, pri)
    redis.call('PUBLISH', ARGV[1], 'r')
  end
  redis.call('HINCRBY', KEYS[4], 'published', 1)
end
return {id, 0}
