-- permit.lua: use an online task's permit (first use wins) or report the task done.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] id  [9] permit end (ms) the permit was signed with  [10] action: use|done
-- [11] http status the caller reports with done (0: none)
-- Returns 'ok', or why not: 'gone' (no such task), 'stale' (a permit of another attempt),
-- 'expired', 'used' (use only), or the task's status when it is not permitted.
local id = ARGV[8]
local tk = task_key(id)
local v = redis.call('HMGET', tk, 'st', 'pe', 'pu', 'sa')
if not v[1] then return 'gone' end
if v[1] ~= 'permitted' then return v[1] end
if v[2] ~= ARGV[9] then return 'stale' end
local now = now_ms()
if now >= tonumber(v[2]) then return 'expired' end
if ARGV[10] == 'use' then
  if v[3] == '1' then return 'used' end
  redis.call('HSET', tk, 'pu', '1')
  return 'ok'
end
redis.call('ZREM', K_RUN, id)
local dur = now - tonumber(v[4])
record_call(dur)
finish(id, 'completed', now, {'hs', ARGV[11], 'dur', dur})
flush(now)
wake()
return 'ok'
