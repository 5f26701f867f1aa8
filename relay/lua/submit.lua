-- submit.lua: queue new tasks (one or many: concurrent Submit calls are combined).
-- KEYS, ARGV[1..7]: lib.lua. KEYS after lib.lua's: the idempotency records the tasks name (same
-- hash tag): hash id (task it created), h (request hash), pri, ca (its priority and creation ms).
-- ARGV[8] tries  [9] max queued (0: no bound)  [10] max queued per subject (0: no bound)
-- ARGV[11] queue timeout (ms): a task times out if it has not started by then
-- ARGV[12] fair sharing between subjects (1: lib.lua fair_score, else 0: first come, first served)
-- ARGV[13] idempotency retention (ms)
-- ARGV[14] number of tasks n; then 12 fields per task: id, priority 0..255, subject ('' for
-- none), type (offline|online), method, url, headers (json), body, namespace ('' for none),
-- idempotency record (index into KEYS; 0 for none), request hash, completion callback (json;
-- '' for none).
-- Returns per task {0, created_at_ms, wait_num} on success; {1} the endpoint's queue is full;
-- {2} the subject's share is full; {3} the idempotency record names a task of another request
-- hash (nothing written); {4, created_at_ms, wait_num (-1 when not pending), id, status ('' once
-- the task left Redis), priority} the record names a task of the same request: that task is the
-- answer and nothing is written. Ids are made per Submit, so a task hash already stored means this
-- call is being sent again (go-redis retries a call whose reply was lost): such a task is answered
-- {0, its created_at_ms, its place or -1} and nothing is written twice (no second queue entry, no
-- second subject count, no reset of a task that started meanwhile).
local now = now_ms()
local tries, max_queued, max_subject = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
local qd = now + tonumber(ARGV[11])
local now_s, qd_s, ttl_s = int_str(now), int_str(qd), int_str(qd - now + FINISHED_TTL)
local fair = ARGV[12] == '1'
local idem_ttl = ARGV[13]
local n = tonumber(ARGV[14])
local out = {}
local queued_any = false
local waiting = redis.call('ZCARD', K_WAIT)
local woke = false
for i = 0, n - 1 do
  local a = 15 + i * 12
  local id, subj = ARGV[a], ARGV[a + 2]
  local ik, rh = tonumber(ARGV[a + 9]), ARGV[a + 10]
  local created = redis.call('HGET', task_key(id), 'ca')
  local rec = ik > 0 and redis.call('HMGET', KEYS[ik], 'id', 'h', 'pri', 'ca') or {}
  if created then
    out[i + 1] = {0, tonumber(created), redis.call('ZRANK', K_QUEUE, id) or -1}
  elseif rec[1] and rec[2] ~= rh then
    out[i + 1] = {3}
  elseif rec[1] then
    local st = redis.call('HGET', task_key(rec[1]), 'st') or ''
    local rank = st == 'pending' and redis.call('ZRANK', K_QUEUE, rec[1]) or -1
    out[i + 1] = {4, tonumber(rec[4]), rank, rec[1], st, tonumber(rec[3])}
  elseif max_queued > 0 and waiting >= max_queued then
    out[i + 1] = {1}
  elseif subj ~= '' and max_subject > 0 and tonumber(redis.call('HGET', K_SUBJ, subj) or '0') >= max_subject then
    out[i + 1] = {2}
  else
    local tk = task_key(id)
    local seq = redis.call('INCR', K_SEQ)
    local pri = tonumber(ARGV[a + 1])
    local score -- below 2^53: exact
    if fair then
      score = int_str(fair_score(pri, subj, seq))
    else
      score = int_str((255 - pri) * 17592186044416 + seq)
    end
    local more = {} -- the marks of a fair task and of one with a completion callback (lib.lua)
    if fair then
      more[#more + 1] = 'fr'
      more[#more + 1] = '1'
    end
    if ARGV[a + 11] ~= '' then
      more[#more + 1] = 'cb'
      more[#more + 1] = ARGV[a + 11]
    end
    redis.call('HSET', tk, 'id', id, 'ep', ENDPOINT, 'st', 'pending', 'pri', ARGV[a + 1], 'sc', score,
      'subj', subj, 'sq', subj ~= '' and '1' or '0', 'ty', ARGV[a + 3], 'ca', now_s, 'att', '0',
      'tries', tries, 'm', ARGV[a + 4], 'u', ARGV[a + 5], 'h', ARGV[a + 6], 'b', ARGV[a + 7], 'qd', qd_s,
      'ns', ARGV[a + 8], unpack(more))
    redis.call('PEXPIRE', tk, ttl_s)
    if ik > 0 then
      redis.call('HSET', KEYS[ik], 'id', id, 'h', rh, 'pri', ARGV[a + 1], 'ca', now_s)
      redis.call('PEXPIRE', KEYS[ik], idem_ttl)
    end
    if subj ~= '' then redis.call('HINCRBY', K_SUBJ, subj, '1') end
    redis.call('ZADD', K_WAIT, qd_s, id)
    queued_any = true
    redis.call('ZADD', K_QUEUE, score, id)
    waiting = waiting + 1
    local rank = redis.call('ZRANK', K_QUEUE, id)
    -- Dispatchers are told when the queue stops being empty; while it is not, they come back
    -- by themselves (a freed slot, the rate limit's next token, their own free workers).
    if rank == 0 and not woke then
      wake()
      woke = true
    end
    out[i + 1] = {0, now, rank}
  end
end
-- Every task the rounds order waits at most the queue timeout: rounds unused for that long order
-- nothing.
if fair then redis.call('PEXPIRE', K_FAIR, ARGV[11]) end
if queued_any then due_at(qd) end
return out
