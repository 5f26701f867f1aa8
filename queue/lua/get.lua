-- get.lua: one job with its position among ready jobs (0 = next to be consumed; -1 when not ready).
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: id.
-- Returns: the job's 21 fields (reply_job), or nil.
local id = ARGV[7]
local rec = load(id)
if not rec then return nil end
local pos = -1
local delivery = rec[R_STATE] == S_READY and lease_of(id)
if delivery then
  as_leased(rec, delivery, tonumber(redis.call('ZSCORE', K_LEASED, id)))
elseif rec[R_STATE] == S_READY then
  local list = K_READY .. rec[R_PRI]
  local at = redis.call('LPOS', list, id)
  if at then
    pos = at
    local higher = redis.call('ZRANGEBYSCORE', K_PRIOS, '(' .. rec[R_PRI], '+inf')
    for _, p in ipairs(higher) do pos = pos + redis.call('LLEN', K_READY .. p) end
  end
end
local out = {}
reply_job(out, id, rec, pos)
return out
