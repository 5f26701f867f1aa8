-- submit.lua: queue a new task.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] id  [9] priority 0..255  [10] subject ('' for none)  [11] type offline|online
-- ARGV[12] method  [13] url  [14] headers (json)  [15] body  [16] tries
-- ARGV[17] max queued (0: no bound)  [18] max queued per subject (0: no bound)
-- ARGV[19] queue timeout (ms): the task times out if it has not started by then
-- ARGV[20] namespace of the submitter ('' for none)
-- Returns {0, created_at_ms, wait_num} on success; {1} the endpoint's queue is full; {2} the
-- subject's share is full; {3} the id exists already.
local id = ARGV[8]
local tk = task_key(id)
if redis.call('EXISTS', tk) == 1 then return {3} end
local max_queued, max_subject = tonumber(ARGV[17]), tonumber(ARGV[18])
if max_queued > 0 and redis.call('ZCARD', K_WAIT) >= max_queued then return {1} end
local subj = ARGV[10]
if subj ~= '' and max_subject > 0 and tonumber(redis.call('HGET', K_SUBJ, subj) or '0') >= max_subject then
  return {2}
end
local now = now_ms()
local seq = redis.call('INCR', K_SEQ)
touch(K_SEQ)
local score = (255 - tonumber(ARGV[9])) * 17592186044416 + seq
local qd = now + tonumber(ARGV[19])
redis.call('HSET', tk, 'id', id, 'ep', ENDPOINT, 'st', 'pending', 'pri', ARGV[9], 'sc', score,
  'subj', subj, 'sq', subj ~= '' and '1' or '0', 'ty', ARGV[11], 'ca', now, 'att', 0,
  'tries', ARGV[16], 'm', ARGV[12], 'u', ARGV[13], 'h', ARGV[14], 'b', ARGV[15], 'qd', qd, 'ns', ARGV[20])
redis.call('PEXPIRE', tk, qd - now + FINISHED_TTL)
if subj ~= '' then
  redis.call('HINCRBY', K_SUBJ, subj, 1)
  touch(K_SUBJ)
end
redis.call('ZADD', K_WAIT, qd, id)
touch(K_WAIT)
redis.call('ZADD', K_QUEUE, score, id)
touch(K_QUEUE)
-- Dispatchers are told when the queue stops being empty; while it is not, they come back by
-- themselves (a freed slot, the rate limit's next token, their own free workers).
if redis.call('ZCARD', K_QUEUE) == 1 then wake() end
return {0, now, redis.call('ZRANK', K_QUEUE, id)}
