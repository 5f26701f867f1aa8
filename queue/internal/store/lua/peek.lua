-- peek.lua: the job a consumer would get next, without leasing it (live jobs only). Read-only.
-- It looks at the first Batch ready jobs of each priority, highest first, and passes over the jobs
-- past their ttl: housekeeping removes them and no consumer ever gets them.
-- The position means what it means in get.lua: the number of ready jobs a consumer gets before this
-- one. The jobs passed over are not consumed, so it is 0, unless a higher priority holds more than
-- Batch ready jobs and its first Batch are all past their ttl: the jobs beyond those were not looked
-- at and may be live, so they count as ahead of this one.
-- KEYS: the queue keys (lib.lua).
-- Returns: the job's 22 fields (reply_job), or nil when nothing is ready.
local now = now_ms()
local prios = redis.call('ZREVRANGE', K_PRIOS, 0, -1)
local ahead = 0
for _, p in ipairs(prios) do
  local list = K_READY .. p
  local ids = redis.call('LRANGE', list, 0, BATCH - 1)
  for _, id in ipairs(ids) do
    local rec = load(id)
    if rec and (rec[R_EXPIRE] == 0 or rec[R_EXPIRE] > now) then
      local out = {}
      reply_job(out, id, rec, ahead)
      return out
    end
  end
  if #ids == BATCH then ahead = ahead + redis.call('LLEN', list) - BATCH end
end
return nil
