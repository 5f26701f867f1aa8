-- pending.lua: the pending jobs of one queue, at most limit of them: the ready jobs in the order
-- consumers get them (priority, highest first, then FIFO), then the callback lane (Position counts
-- within the lane), then the delayed jobs by due time, then
-- the leased jobs by lease end. Read-only. Jobs that Get answers as gone are left out: waiting jobs
-- past their ttl, and leased ones whose lease ended after their ttl (housekeeping removes them), so
-- a page may hold fewer than limit jobs while such jobs wait for housekeeping.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: limit.
-- Returns: {total, n, job fields...} with 22 fields per job (reply_job); total counts every job in
-- the ready lists, the callback lane, the delayed set and the leased set, before the jobs past their ttl are left out.
local now = now_ms()
local limit = tonumber(ARGV[7])
local out = {0, 0}
local n, total = 0, 0
local function live(rec) return rec[R_EXPIRE] == 0 or rec[R_EXPIRE] > now end

-- reply_waiting replies the live jobs among ids (a page of a ready list, of the callback lane or of
-- the delayed set), their Position counting on from pos, or -1 where pos is nil. Returns the next
-- position.
local function reply_waiting(ids, pos)
  for _, id in ipairs(ids) do
    local rec = load(id)
    if rec and live(rec) then
      reply_job(out, id, rec, pos or -1)
      if pos then pos = pos + 1 end
      n = n + 1
    end
  end
  return pos
end

local pos = 0
for _, p in ipairs(redis.call('ZREVRANGE', K_PRIOS, 0, -1)) do
  local list = K_READY .. p
  total = total + redis.call('LLEN', list)
  if n < limit then pos = reply_waiting(redis.call('LRANGE', list, 0, limit - n - 1), pos) end
end

-- Then the callback lane (jobs only the callback deliverer gets), in the order it leases them.
total = total + redis.call('LLEN', callbacks_key())
if n < limit then reply_waiting(redis.call('LRANGE', callbacks_key(), 0, limit - n - 1), 0) end

total = total + redis.call('ZCARD', K_DELAYED)
if n < limit then reply_waiting(redis.call('ZRANGE', K_DELAYED, 0, limit - n - 1), nil) end

total = total + redis.call('ZCARD', K_LEASED)
if n < limit then
  local leased = redis.call('ZRANGE', K_LEASED, 0, limit - n - 1, 'WITHSCORES')
  for i = 1, #leased, 2 do
    local rec = leased_view(leased[i], tonumber(leased[i + 1]), now)
    if rec then
      reply_job(out, leased[i], rec, -1)
      n = n + 1
    end
  end
end

out[1], out[2] = total, n
return out
