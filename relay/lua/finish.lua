-- finish.lua: store the outcome of offline calls. Each outcome names the attempt it belongs to,
-- so a dispatcher whose lease ran out (and whose task was retried meanwhile) changes nothing.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] number of outcomes n; then 10 fields per outcome: id, attempt, outcome (ok|retry|fail),
-- http status (0: none; 0 is stored too), result headers (json), result body, truncated (0|1), error,
-- retry delay (ms), call duration (ms).
-- Returns n codes: 1 stored (completed, failed or set to retry), 2 the task was cancelled while
-- the call ran (result discarded, slot freed), 0 no such task, -1 the attempt no longer holds
-- the task (lease expired).
local now = now_ms()
local n = tonumber(ARGV[8])
local out = {}
local freed = false
for i = 0, n - 1 do
  local a = 9 + i * 10
  local id, att, outcome = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  local tk = task_key(id)
  local v = redis.call('HMGET', tk, 'st', 'att', 'tries')
  if not v[1] then
    out[i + 1] = 0
    if redis.call('ZREM', K_RUN, id) == 1 then freed = true end
  elseif tonumber(v[2]) ~= att then
    out[i + 1] = -1
  elseif v[1] == 'cancelled' then
    if redis.call('ZREM', K_RUN, id) == 1 then freed = true end
    out[i + 1] = 2
  elseif v[1] ~= 'processing' then
    out[i + 1] = -1
  else
    redis.call('ZREM', K_RUN, id)
    freed = true
    record_call(tonumber(ARGV[a + 9]))
    local fields = {'hs', ARGV[a + 3], 'rh', ARGV[a + 4], 'res', ARGV[a + 5], 'rt', ARGV[a + 6],
      'err', ARGV[a + 7], 'dur', ARGV[a + 9]}
    if outcome == 'ok' then
      finish(id, 'completed', now, fields)
    elseif outcome == 'retry' and att < tonumber(v[3]) then
      redis.call('HSET', tk, 'st', 'pending', unpack(fields))
      local delay = tonumber(ARGV[a + 8])
      redis.call('ZADD', K_DELAYED, int_str(now + delay), id)
      if redis.call('PTTL', tk) < delay + FINISHED_TTL then
        redis.call('PEXPIRE', tk, int_str(delay + FINISHED_TTL))
      end
    else
      finish(id, 'failed', now, fields)
    end
    out[i + 1] = 1
  end
end
flush(now)
if freed then wake() end
return out
