-- get.lua: one job with its position among ready jobs (0 = next to be consumed; -1 when not ready).
-- Read-only. A job past its ttl is gone (docs/job-states.md) even before housekeeping removes it:
-- a waiting (delayed or ready) job whose ttl has passed, and a leased one whose lease ended after its
-- ttl (it can no longer be acked and will expire), answer nil. A leased job whose lease still runs
-- is shown whatever its ttl: it is not taken from its consumer.
-- The position counts the ready jobs a consumer gets before this one: the jobs ahead in the job's own
-- priority and all the ready jobs of higher priorities, less those past their ttl that wait for
-- housekeeping (no consumer gets them). It is exact while at most Batch jobs past their ttl wait to be
-- removed; beyond that it may still count some of them.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: id.
-- Returns: the job's 22 fields (reply_job), or nil.
local id = ARGV[7]
local rec = load(id)
if not rec then return nil end
local now = now_ms()
local expired = rec[R_EXPIRE] > 0 and rec[R_EXPIRE] <= now
local pos = -1
local delivery = rec[R_STATE] == S_READY and lease_of(id)
if delivery then
  local lease_until = tonumber(redis.call('ZSCORE', K_LEASED, id))
  if expired and lease_until and lease_until <= now then return nil end
  as_leased(rec, delivery, lease_until)
elseif expired and (rec[R_STATE] == S_READY or rec[R_STATE] == S_DELAYED) then
  return nil
elseif rec[R_STATE] == S_READY and has_callback(rec) then
  pos = redis.call('LPOS', callbacks_key(), id) or -1
elseif rec[R_STATE] == S_READY then
  local pri = rec[R_PRI]
  local list = K_READY .. pri
  local at = redis.call('LPOS', list, id)
  if at then
    pos = at
    local higher = redis.call('ZRANGEBYSCORE', K_PRIOS, '(' .. pri, '+inf')
    for _, p in ipairs(higher) do pos = pos + redis.call('LLEN', K_READY .. p) end
    -- Jobs past their ttl are in 'expiry' until housekeeping removes them; the ready ones ahead of
    -- this job are not consumed, so they do not count.
    local gone = redis.call('ZRANGEBYSCORE', K_EXPIRY, '-inf', ms_str(now), 'LIMIT', '0', BATCH_S)
    for _, x in ipairs(gone) do
      if not redis.call('ZSCORE', K_DELAYED, x) then
        local r = load(x)
        if r and r[R_STATE] == S_READY and (r[R_PRI] > pri
            or (r[R_PRI] == pri and at > 0 and redis.call('LPOS', list, x, 'MAXLEN', at))) then
          pos = pos - 1
        end
      end
    end
  end
end
local out = {}
reply_job(out, id, rec, pos)
return out
