-- ack.lua: finish deliveries. A job acked with a result is kept (state done, payload dropped) for
-- the result retention; one acked without a result is removed at once.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: number of acks n; then 4 fields per ack: id, delivery, has_result (0|1), result.
-- Returns: n codes: 1 acked, 0 no such job, -1 lease lost (expired, or another delivery holds it).
local now = now_ms()
local n = tonumber(ARGV[7])
local out = {}
local acked, kept = 0, 0
for i = 0, n - 1 do
  local a = 8 + i * 4
  local id = ARGV[a]
  local rec, why = check_lease(id, tonumber(ARGV[a + 1]), now)
  if not rec then
    if why == 'not_found' then out[#out + 1] = 0 else out[#out + 1] = -1 end
  else
    redis.call('ZREM', K_LEASED, id)
    release_unique(id, rec)
    if ARGV[a + 2] == '1' then
      rec[R_STATE] = S_DONE
      rec[R_PAYLOAD] = ''
      rec[R_RESULT] = ARGV[a + 3]
      rec[R_FINISHED] = now
      rec[R_LEASE] = 0
      save(id, rec)
      redis.call('ZADD', K_DONE, now, id)
      kept = kept + 1
    else
      redis.call('HDEL', K_JOBS, id)
    end
    acked = acked + 1
    out[#out + 1] = 1
  end
end
count('acked', acked)
if kept > 0 then trim(K_DONE, now, RESULT_RETENTION, RESULT_MAX, nil) end
return out
