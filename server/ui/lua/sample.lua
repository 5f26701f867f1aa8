-- sample.lua: record a queue's cumulative counters as the sample of the current minute in the
-- hour's hash and of the current slot (ARGV[6] seconds) in the day's hash (the first sample of a
-- minute or slot wins, so several servers sampling the same queue agree), and drop the samples
-- older than each window. The hashes hold at most window+2 and day slots+2 sample fields, and
-- expire when nobody samples them any more.
--
-- A sample also holds the oldest ready job's age then, and the processing times of the acks since
-- the hash's previous sample: the difference between the queue's cumulative histogram now and the
-- one the hash's field 'h' kept at that sample ("<slot>|<histogram>"), which this sample replaces.
-- So a sample carries only the buckets that acks fell in since the one before, however long the
-- queue has run. Without an earlier 'h' the processing times are unknown ('?').
--
-- KEYS[1]  the queue's hour hash (field: minute since the epoch, value:
--          "published:acked:failed:oldest_ms:histogram"; and 'h')
-- KEYS[2]  the queue's day hash (field: slot since the epoch, same value; and 'h')
-- ARGV[1]  published counter
-- ARGV[2]  acked counter
-- ARGV[3]  failed counter
-- ARGV[4]  hour window in minutes (older samples are dropped)
-- ARGV[5]  TTL of the hour hash in seconds
-- ARGV[6]  seconds in a slot of the day hash
-- ARGV[7]  slots in the day window
-- ARGV[8]  TTL of the day hash in seconds
-- ARGV[9]  the oldest ready job's age (ms)
-- ARGV[10] the cumulative processing-time histogram: "bucket.count" pairs joined by ',' ('' none)
-- Returns: the current minute (Redis TIME).
local t = tonumber(redis.call('TIME')[1])
local counts = ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[3] .. ':' .. ARGV[9] .. ':'
local function parse(h)
  local out = {}
  for b, c in string.gmatch(h, '(%d+)%.(%d+)') do out[b] = tonumber(c) end
  return out
end
local now_hist = parse(ARGV[10])
-- since is the histogram of the acks after the cumulative one kept in prev ("<slot>|<hist>").
local function since(prev)
  if not prev then return '?' end
  local was = parse(string.sub(prev, (string.find(prev, '|', 1, true) or 0) + 1))
  local parts = {}
  for b, c in pairs(now_hist) do
    local d = c - (was[b] or 0)
    if d > 0 then parts[#parts + 1] = b .. '.' .. d end
  end
  return table.concat(parts, ',')
end
local function record(key, slot, keep, ttl)
  if redis.call('HEXISTS', key, slot) == 0 then
    redis.call('HSET', key, slot, counts .. since(redis.call('HGET', key, 'h')), 'h', slot .. '|' .. ARGV[10])
    local oldest = slot - keep
    for _, f in ipairs(redis.call('HKEYS', key)) do
      if f ~= 'h' and (tonumber(f) == nil or tonumber(f) < oldest) then
        redis.call('HDEL', key, f)
      end
    end
  end
  redis.call('EXPIRE', key, ttl)
end
local minute = math.floor(t / 60)
record(KEYS[1], minute, tonumber(ARGV[4]), ARGV[5])
record(KEYS[2], math.floor(t / tonumber(ARGV[6])), tonumber(ARGV[7]), ARGV[8])
return minute
