-- get.lua: read a task, its place in the queue and what the ETA needs. The first read of a final
-- status shortens the task's life to the read retention, unless the task still waits for the
-- archive or for its completion callback to be handed on: then the hand-off shortens it
-- (handed_off.lua), so a short read retention never drops a task before it was handed on.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] id  [9] mark a final status read (0|1)
-- Returns {} when there is no such task, else {fields (lib.lua task_fields), wait_num (-1 when
-- not waiting), running, queued, now (ms), ring (HGETALL), the rate limit's next token time (ms,
-- a float as a string; false when none)}; the last two only while waiting, for the ETA.
local tk = task_key(ARGV[8])
local v = redis.call('HMGET', tk, 'st', 'sc', 'rd')
if not v[1] then return {} end
local st = v[1]
local final = st == 'completed' or st == 'failed' or st == 'cancelled' or st == 'timeout'
if final and ARGV[9] == '1' and v[3] ~= '1' then
  redis.call('HSET', tk, 'rd', '1')
  local ttl = redis.call('PTTL', tk)
  if not handing_off(ARGV[8]) and (ttl < 0 or ttl > READ_TTL) then redis.call('PEXPIRE', tk, READ_TTL) end
end
local rank = -1
-- Queued: its rank (fair tasks of one round share a score). Waiting out a retry backoff: the
-- tasks ahead of the place it goes back to.
if st == 'pending' then
  rank = redis.call('ZRANK', K_QUEUE, ARGV[8]) or redis.call('ZCOUNT', K_QUEUE, '-inf', '(' .. v[2])
end
local f = task_fields(tk)
local ring, tat = {}, false
if rank >= 0 then ring, tat = redis.call('HGETALL', K_RING), redis.call('GET', K_RATE) end
return {f, rank, redis.call('ZCARD', K_RUN), redis.call('ZCARD', K_QUEUE), now_ms(), ring, tat}
