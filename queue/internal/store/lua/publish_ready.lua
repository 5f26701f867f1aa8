-- publish_ready.lua: add one job that is due now and has no ttl, unique key or callback: a lone
-- Publish of the common kind (a web handler scheduling one job), in the fewest steps. publish.lua
-- does the same for such jobs in batches, and everything for the others; both write the same record.
-- Runs only as a library function (Redis 7+, which has cmsgpack), and without lib.lua's bind: it
-- takes only the keys it touches and the arguments it always needs (see below).
-- KEYS[1] jobs, KEYS[2] the ready list of the job's priority, KEYS[3] prios, KEYS[4] stats (the
--   queue keys of lib.lua, the ready list named in full).
-- ARGV[1] id, then the job's record encoded by the client (record.go) as cmsgpack encodes it, in
--   one of two forms:
--   - stamped: ARGV[2] the whole record, its publish and due times the client's reading of
--     Redis's clock (clock.go). That time decides nothing (a job due now is due whatever it says)
--     and is never ahead of Redis's clock; the script does not call TIME;
--   - around: ARGV[2] the record before its publish time (cmsgpack array header and fields R_STATE
--     to R_BMAX), ARGV[3] the record after its due time (R_LEASE to R_CALLBACK); the script puts
--     Redis's time between them. The client sends this form when it has no fresh reading.
-- The priority and the notify channel are not arguments: only a push into an empty list needs
-- them, and it reads them off the key names (keys.go: the ready list's name ends with its
-- priority, and the channel is the jobs key's name with 'notify' for 'jobs'). Every argument costs
-- Redis about 1,900 instructions before the script starts, whether the script reads it or not.
-- Returns: 1 for a stamped record; Redis's time (ms) for the other form, which the client keeps as
-- its new reading. The job has no unique key, so it is never a duplicate: the answer for it is its
-- own id, which the client made. Ids are made per publish, so an id already stored means this call
-- is being sent again (a client retry after a lost reply): it writes nothing.
local id = ARGV[1]
local record, now = ARGV[2], 1
if ARGV[3] then
  now = now_ms()
  -- R_PUBLISHED and R_DUE: a job due now is due at its publish time.
  record = record .. cmsgpack.pack(now, now) .. ARGV[3]
end
if redis.call('HSETNX', KEYS[1], id, record) == 1 then
  -- A push into an empty list adds the priority to prios and wakes consumers (push_ready).
  if redis.call('RPUSH', KEYS[2], id) == 1 then
    local pri = string.match(KEYS[2], '%d+$')
    redis.call('ZADD', KEYS[3], pri, pri)
    redis.call('PUBLISH', string.sub(KEYS[1], 1, -5) .. 'notify', 'r')
  end
  redis.call('HINCRBY', KEYS[4], 'published', '1')
end
return now
