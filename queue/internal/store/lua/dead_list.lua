-- dead_list.lua: a page of the dead letter, oldest first.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: offset; ARGV[8]: limit.
-- Returns: {total, n, job fields...} with 22 fields per job (reply_job).
local offset, limit = tonumber(ARGV[7]), tonumber(ARGV[8])
local ids = redis.call('ZRANGE', K_DEAD, offset, offset + limit - 1)
local out = {redis.call('ZCARD', K_DEAD), 0}
local n = 0
for _, id in ipairs(ids) do
  local rec = load(id)
  if rec then
    reply_job(out, id, rec, -1)
    n = n + 1
  end
end
out[2] = n
return out
