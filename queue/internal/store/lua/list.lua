-- list.lua: a page of one queue's jobs in one state, for dashboards and the job list API. Read-only.
-- Pages are offsets into the structure the state lives in, so jobs that move between two pages
-- shift the pages after them.
--   ready      the ready lists by priority, highest first, FIFO within one (Position set), then
--              the callback lane (Position within the lane)
--   scheduled  delayed jobs that were never delivered, by due time
--   retrying   delayed jobs waiting for another try after a failed delivery, by due time
--   leased     by lease end (the delivery number and the lease end set, as Get shows them)
--   dead       oldest first
--   done       newest first
-- Scheduled and retrying share the delayed set: a call reads at most SCAN (256) of its members from
-- the offset and returns the ones of its state, so a page may hold fewer than limit jobs and
-- still have a next one. Jobs that Get answers as gone (past their ttl, waiting for housekeeping)
-- are left out. Payloads and results are cut to their first cut bytes, so that an answer stays
-- small whatever the jobs hold.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: state; ARGV[8]: offset; ARGV[9]: limit; ARGV[10]: cut.
-- Returns: {total, next, n, job fields...} with 22 fields per job (reply_job): total is the size
-- of the structure listed (the delayed set for scheduled and retrying), next the offset of the
-- next page (-1: none).
local SCAN, CHUNK = 256, 32
local now = now_ms()
local state, offset, limit, cut = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local out = {0, -1, 0}
local n = 0
local function live(rec) return rec[R_EXPIRE] == 0 or rec[R_EXPIRE] > now end
local function reply(id, rec, pos)
  rec[R_PAYLOAD] = string.sub(rec[R_PAYLOAD], 1, cut)
  rec[R_RESULT] = string.sub(rec[R_RESULT], 1, cut)
  reply_job(out, id, rec, pos)
  n = n + 1
end

-- zpage replies the jobs of a zset page (ids read from rank offset on, reversed when rev).
local function zpage(key, rev)
  local total = redis.call('ZCARD', key)
  local cmd = 'ZRANGE'
  if rev then cmd = 'ZREVRANGE' end
  for _, id in ipairs(redis.call(cmd, key, offset, offset + limit - 1)) do
    local rec = load(id)
    if rec then reply(id, rec, -1) end
  end
  return total, offset + limit < total
end

local total, more = 0, false
if state == 'ready' then
  -- The lists in the order they are taken: each priority's, then the callback lane. skip counts
  -- down the offset across them; pos is the Position of the next job in its own line.
  local lists = {}
  for _, p in ipairs(redis.call('ZREVRANGE', K_PRIOS, 0, -1)) do lists[#lists + 1] = K_READY .. p end
  lists[#lists + 1] = callbacks_key()
  local skip, pos = offset, 0
  for i, list in ipairs(lists) do
    if i == #lists then pos = 0 end
    local len = redis.call('LLEN', list)
    total = total + len
    if skip >= len then
      skip = skip - len
      pos = pos + len
    elseif n < limit then
      local ids = redis.call('LRANGE', list, skip, skip + limit - n - 1)
      pos = pos + skip
      for _, id in ipairs(ids) do
        local rec = load(id)
        if rec and live(rec) then reply(id, rec, pos) end
        pos = pos + 1
      end
      pos = pos + len - skip - #ids
      skip = 0
    end
  end
  more = offset + limit < total
elseif state == 'scheduled' or state == 'retrying' then
  local retrying = state == 'retrying'
  total = redis.call('ZCARD', K_DELAYED)
  local ids = redis.call('ZRANGE', K_DELAYED, offset, offset + SCAN - 1)
  local raws = {}
  local read = 0
  for i, id in ipairs(ids) do
    if n >= limit then break end
    read = read + 1
    -- The records come CHUNK at a time: one HMGET each, and no more of them than the page needs.
    if i % CHUNK == 1 then raws = redis.call('HMGET', K_JOBS, unpack(ids, i, math.min(i + CHUNK - 1, #ids))) end
    local raw = raws[(i - 1) % CHUNK + 1]
    if raw then
      local delivery, expire_at = lease_fields(raw)
      if (delivery > 0) == retrying and (expire_at == 0 or expire_at > now) then reply(id, decode(raw), -1) end
    end
  end
  more = offset + read < total
  if more then out[2] = offset + read end
elseif state == 'leased' then
  total = redis.call('ZCARD', K_LEASED)
  local leased = redis.call('ZRANGE', K_LEASED, offset, offset + limit - 1, 'WITHSCORES')
  for i = 1, #leased, 2 do
    local rec = leased_view(leased[i], tonumber(leased[i + 1]), now)
    if rec then reply(leased[i], rec, -1) end
  end
  more = offset + limit < total
elseif state == 'dead' then
  total, more = zpage(K_DEAD, false)
elseif state == 'done' then
  total, more = zpage(K_DONE, true)
else
  return redis.error_reply('BAD_STATE')
end
out[1], out[3] = total, n
if more and out[2] == -1 then out[2] = offset + limit end
return out
