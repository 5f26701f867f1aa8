-- consume_callbacks.lua: lease up to count jobs of the callback lane of one queue, oldest first, for
-- the callback deliverer. Housekeeping runs first, as in consume.lua, so due callback jobs come in
-- on time even when no maintainer runs. Each lease lasts the job's own ttr (Publish makes it longer
-- than the callback's timeout). Leases live where consumers' leases do, so ack, nack, touch and
-- lease expiry work on them unchanged; a lease that runs out puts the job back on the callback lane
-- (or in the dead letter) with the same id.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: count.
-- Then it sets the lane's entry in the callback lanes' due index (lane_settle in lib.lua): now
-- while jobs are left on the lane, else the next time housekeeping may bring some (next_wake), or
-- no entry when nothing is scheduled. A paused queue leases nothing and keeps no entry for its lane
-- but its next wake: Resume marks the lane due again.
-- Returns: {now_ms, next_wake_ms (-1: none), more (1: jobs are left),
-- n, job fields...} with 4 fields per job (lease_popped).
local now = now_ms()
local want = tonumber(ARGV[7])
housekeeping(now)
local out = {now, 0, 0, 0}
local got, more = 0, 0
if redis.call('HGET', K_META, 'paused') ~= '1' then
  local ids = redis.call('LPOP', callbacks_key(), istr(want))
  if ids then got = lease_popped(out, ids, now, 0) end
  if redis.call('LLEN', callbacks_key()) > 0 then more = 1 end
end
count('consumed', got)
flush_notify()
local wake = next_wake()
lane_settle(now, more == 1, wake)
out[2] = wake
out[3] = more
out[4] = got
return out
