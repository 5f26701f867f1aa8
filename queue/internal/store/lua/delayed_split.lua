-- delayed_split.lua: how many of a queue's delayed jobs wait for another try after a failed
-- delivery (retrying) and how many were never delivered (scheduled), among the first SCAN (256) by due
-- time. Read-only; it reads only the first fields of each record.
-- KEYS: the queue keys (lib.lua).
-- Returns: {delayed, scanned, retrying}: the size of the delayed set, how many of its members were
-- read (all of them when it holds at most SCAN) and how many of those are retrying.
local SCAN = 256
local ids = redis.call('ZRANGE', K_DELAYED, 0, SCAN - 1)
local retrying = 0
if #ids > 0 then
  for _, raw in ipairs(redis.call('HMGET', K_JOBS, unpack(ids))) do
    if raw and lease_fields(raw) > 0 then retrying = retrying + 1 end
  end
end
return {redis.call('ZCARD', K_DELAYED), #ids, retrying}
