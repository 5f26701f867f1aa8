-- peek.lua: the job a consumer would get next, without leasing it (live jobs only).
-- KEYS: the queue keys (lib.lua).
-- Returns: the job's 21 fields (reply_job), or nil when nothing is ready.
local now = now_ms()
local prios = redis.call('ZREVRANGE', K_PRIOS, 0, -1)
for _, p in ipairs(prios) do
  local ids = redis.call('LRANGE', K_READY .. p, 0, BATCH - 1)
  for i, id in ipairs(ids) do
    local rec = load(id)
    if rec and (rec[R_EXPIRE] == 0 or rec[R_EXPIRE] > now) then
      local out = {}
      reply_job(out, id, rec, i - 1)
      return out
    end
  end
end
return nil
