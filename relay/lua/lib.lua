-- lib.lua: helpers shared by every endpoint script. Not a script itself: scripts.go builds a Redis
-- function library from it and the scripts (Redis 7+: the helpers are created once, when the
-- library loads), and, for stores without FUNCTION, EVAL scripts that start with it. Either way a
-- script's first step is bind(KEYS, ARGV), which points the helpers at the call's keys and
-- arguments and resets what the call counts. Every endpoint script receives the same KEYS, all of
-- one endpoint and all sharing its hash tag {ep:<name>}:
--   KEYS[1]  queue    zset  id -> score: (255 - priority) * 2^44 + sequence; the pending tasks
--                            that may start now, in the order they start (ZRANK = tasks ahead)
--   KEYS[2]  wait     zset  id -> queue deadline (ms) of every task that has not started yet
--   KEYS[3]  delayed  zset  id -> due time (ms) of tasks waiting out a retry backoff
--   KEYS[4]  running  zset  id -> lease end (offline call) or permit end (online) in ms; its size
--                            is the number of concurrency slots taken
--   KEYS[5]  subjects hash  subject -> number of its tasks in queue/wait (per-subject cap)
--   KEYS[6]  seq      string sequence of submitted tasks (FIFO within a priority)
--   KEYS[7]  rate     string GCRA theoretical arrival time (ms, float) of the QPS limit
--   KEYS[8]  ring     hash  (second mod 60) -> "second:count:duration_ms" of finished calls
--   KEYS[9]  counts   hash  status -> tasks that ended in it (totals)
--   KEYS[10] archive  zset  id -> end time (ms) of finished tasks not yet archived
--   KEYS[11] task     prefix of the task hashes: the key of task id is KEYS[11]..id
--   KEYS[12] starts   zset  member -> start (ms, fractional) of the rate-limited calls of about
--                            the last second: the task id and '#' and its attempt (a slot: its
--                            member), at its token's time, or later once its call was reported
--                            late (late.lua); the rate limit starts no call that would put more
--                            than its window of calls into about a second (rate_tokens)
--   KEYS[13] slots    zset  'slot:' .. holder -> expiry (ms) of the slots held by callers that
--                            call the endpoint themselves (slot_take.lua: callbacks); each member
--                            is in running too, with the same score, so it takes a concurrency
--                            slot like a task; no task id starts with 'slot:' (':' is not allowed
--                            in an endpoint name)
--   KEYS[14] fair     zset  the rounds of fair sharing (an endpoint's FairShare; see fair_score)
--                            within each priority band b = 255 - priority, scored on the queue's
--                            scale: member b -> b * 2^44 + the round of the latest task started
--                            in the band; member b .. ':' .. subject -> b * 2^44 + the round of
--                            the subject's latest task submitted in the band
--   KEYS[15] completions zset id -> when (ms) the completion callback of an ended task is due
--                            to be handed to the callback queue: its end, or, once claimed
--                            (completions_claim.lua), the end of the claim; removed when handed
--                            off (handed_off.lua), so a process that dies mid hand-off loses none
--   KEYS[16] due     zset   the shard of the due index in the endpoint's slot (keys.go dueBase):
--                            member the endpoint name (ARGV[3]), score at or before its next
--                            lease, permit, slot or queue deadline end, or hand-off or trim of its
--                            finished tasks (due_at); maintain.lua sets it, or removes it
-- and the same leading ARGV:
--   ARGV[1] wake channel (PUBLISHed the endpoint name when a task or a slot becomes free)
--   ARGV[2] prefix of the task channels (PUBLISHed to when a task is permitted or ends)
--   ARGV[3] endpoint name
--   ARGV[4] finished retention (ms)   ARGV[5] retention after the final status was read (ms)
--   ARGV[6] bound on the archive backlog (count)
--   ARGV[7] archive (1: finished tasks are remembered in KEYS[10] for the archive, else 0)
-- Script-specific arguments start at ARGV[8].
--
-- Nothing here needs a TTL to stay bounded: the sets and hashes are emptied as tasks move on
-- (Redis removes an empty key), task hashes expire, the start log is trimmed to about a second
-- and expires with the rate limit's token time, and the counters (seq, rate, ring, counts) are one small key each per endpoint,
-- deleted by maintain.lua once a deleted endpoint is empty.
--
-- Task hash fields: id ep st(status) pri sc(score) subj sq(1 while counted in subjects) ty
-- (offline|online) ca sa ea (created/started/ended ms) att (attempts started) tries m u h b
-- (method, url, headers json, body) qd (queue deadline ms) hs rh res rt (http status, result
-- headers json, result body, truncated) err dur (ms) pe (permit end ms) pu (permit used) rd (final
-- status read) ns (namespace of the submitter) fr (1: queued by fair sharing, its score a round)
-- cb (completion callback, JSON: url, headers, timeout_ms; absent without one).
-- The keys and common arguments of the current call, set by bind.
local K_QUEUE, K_WAIT, K_DELAYED, K_RUN, K_SUBJ, K_SEQ, K_RATE, K_RING, K_COUNTS, K_ARCH, K_TASK, K_STARTS, K_SLOTS, K_FAIR
local K_DONE, K_DUE
local WAKE, TASK_CHANNEL, ENDPOINT, FINISHED_TTL, FINISHED_TTL_S, READ_TTL, ARCH_MAX, ARCHIVE
-- What the current call counts, written once at its end (flush).
local calls_n, calls_ms, ended, ended_any

local function bind(keys, args)
  K_QUEUE, K_WAIT, K_DELAYED, K_RUN = keys[1], keys[2], keys[3], keys[4]
  K_SUBJ, K_SEQ, K_RATE, K_RING = keys[5], keys[6], keys[7], keys[8]
  K_COUNTS, K_ARCH, K_TASK, K_STARTS = keys[9], keys[10], keys[11], keys[12]
  K_SLOTS, K_FAIR, K_DONE, K_DUE = keys[13], keys[14], keys[15], keys[16]
  WAKE, TASK_CHANNEL, ENDPOINT = args[1], args[2], args[3]
  FINISHED_TTL, FINISHED_TTL_S, READ_TTL = tonumber(args[4]), args[4], tonumber(args[5])
  ARCH_MAX, ARCHIVE = tonumber(args[6]), args[7] == '1'
  calls_n, calls_ms, ended, ended_any = 0, 0, {}, false
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function task_key(id) return K_TASK .. id end

-- task_fields reads what a task is to its readers (get.lua, completions_claim.lua): the order
-- parseTask reads in Go.
local function task_fields(tk)
  return redis.call('HMGET', tk, 'id', 'ep', 'st', 'pri', 'subj', 'ty', 'ca', 'sa', 'ea', 'att', 'tries',
    'hs', 'rh', 'res', 'rt', 'err', 'pe', 'pu', 'dur', 'm', 'u', 'ns', 'cb')
end

-- handing_off reports whether an ended task still waits to be handed on: to the archive, or its
-- completion callback to the callback queue. Until then a read of its final status does not
-- shorten its stay (handed_off.lua does once it is handed on).
local function handing_off(id)
  return (ARCHIVE and redis.call('ZSCORE', K_ARCH, id)) or redis.call('ZSCORE', K_DONE, id)
end

-- int_str is a whole number as a string, written as Redis would write it. Redis 7.0 turns every
-- number a script passes to redis.call into a string with snprintf('%.17g'), which costs it 2,000
-- to 6,600 instructions, about three times string.format('%d'); so whole numbers go as strings.
-- Never for a fraction ('%d' would cut it): rate-limit times go through num_str (below).
local function int_str(n) return string.format('%d', n) end

local function wake() redis.call('PUBLISH', WAKE, ENDPOINT) end

-- due_at records in the due index that the endpoint has work at t (ms): a lease, permit, slot or
-- queue deadline ends, or finished tasks are to be handed on. The entry only moves earlier (LT;
-- added when missing), so it stays at or before the next due time whatever the order of calls;
-- maintain.lua sets it to that time once it has done what was due, so a maintenance pass visits
-- only endpoints with something due.
local function due_at(t)
  redis.call('ZADD', K_DUE, 'LT', int_str(math.floor(t)), ENDPOINT)
end

local function notify_task(id, status) redis.call('PUBLISH', TASK_CHANNEL .. id, status) end

-- unsubject forgets a task in the per-subject count, given its sq and subj fields; started says
-- the task starts (else it was cancelled or timed out). A fair task that leaves without starting
-- as its subject's last waiting one also drops the subject's round in its band (see fair_score):
-- the subject comes back in the current round, and subjects that left take no room. (A task that
-- starts keeps it, so a subject that submits again at once waits for the next round.)
local function unsubject(tk, sq, subj, started)
  if sq == '1' and subj and subj ~= '' then
    redis.call('HSET', tk, 'sq', '0')
    if redis.call('HINCRBY', K_SUBJ, subj, '-1') <= 0 then
      redis.call('HDEL', K_SUBJ, subj)
      if not started then
        local f = redis.call('HMGET', tk, 'fr', 'pri')
        if f[1] == '1' then redis.call('ZREM', K_FAIR, int_str(255 - tonumber(f[2])) .. ':' .. subj) end
      end
    end
  end
end

-- record_call counts a finished call of dur ms (flush writes the count).
local function record_call(dur)
  calls_n, calls_ms = calls_n + 1, calls_ms + dur
end

-- finish ends a task in status st at now: kept for the finished retention, queued for the
-- archive, counted, and its waiters told. extra: more field/value pairs to set with the status.
local function finish(id, st, now, extra)
  local tk = task_key(id)
  local at = int_str(now)
  if extra then
    redis.call('HSET', tk, 'st', st, 'ea', at, unpack(extra))
  else
    redis.call('HSET', tk, 'st', st, 'ea', at)
  end
  redis.call('PEXPIRE', tk, FINISHED_TTL_S)
  if ARCHIVE then
    redis.call('ZADD', K_ARCH, at, id)
    due_at(now)
  end
  -- Marked in the same script as the end: the callback is handed on at least once.
  if redis.call('HEXISTS', tk, 'cb') == 1 then
    redis.call('ZADD', K_DONE, at, id)
    due_at(now)
  end
  ended[st] = (ended[st] or 0) + 1
  ended_any = true
  notify_task(id, st)
end

-- flush writes what the call counted: the ended tasks by status, the archive backlog bound, and
-- the finished calls in the per-second ring (60 fields at most: second mod 60 ->
-- "second:count:total ms").
local function flush(now)
  if ended_any then
    for st, n in pairs(ended) do redis.call('HINCRBY', K_COUNTS, st, int_str(n)) end
    if ARCHIVE and redis.call('ZCARD', K_ARCH) > ARCH_MAX then
      redis.call('ZREMRANGEBYRANK', K_ARCH, '0', int_str(-ARCH_MAX - 1))
    end
  end
  if calls_n > 0 then
    local sec = math.floor(now / 1000)
    local f = tostring(sec % 60)
    local cur = redis.call('HGET', K_RING, f)
    local count, total = calls_n, calls_ms
    if cur then
      local s, c, d = string.match(cur, '^(%d+):(%d+):(%d+)$')
      if tonumber(s) == sec then
        count, total = tonumber(c) + calls_n, tonumber(d) + calls_ms
      end
    end
    redis.call('HSET', K_RING, f, sec .. ':' .. count .. ':' .. math.floor(total))
  end
end

-- requeue puts a task back in the queue at its first place (score), pending.
local function requeue(id, extra)
  local tk = task_key(id)
  local sc = redis.call('HGET', tk, 'sc')
  redis.call('HSET', tk, 'st', 'pending', unpack(extra or {}))
  redis.call('ZADD', K_QUEUE, sc, id)
end

-- num_str is a number as a string that keeps the exact double (%.17g): a time in ms since 1970 as
-- Lua's tostring writes it keeps 0.1 ms, which lost the fraction of an interval at every call.
local function num_str(x) return string.format('%.17g', x) end

-- rate_tokens takes up to n tokens of the QPS limit (GCRA) at now: tat (K_RATE) is when the next
-- token is due. Tokens are due every interval (1000 / qps ms) from t0; a burst lets t0 run
-- burst - 1 intervals behind now, and the lookahead lets tokens due within it be taken now. Each
-- token is checked against the start log (K_STARTS): when window calls are logged in the span (ms,
-- a second and a little: relay's logSpan) before it, it moves to a span after the oldest one that
-- must leave, and the tokens after it follow. Calls on time never move a token (the spacing puts
-- fewer than window calls in any span); a call reported late does, by what its second needs.
-- Returns the tokens (start times in ms, fractional), the time of the token after them and the
-- interval. A caller logs the tokens it uses (rate_log) and stores the next one (rate_store).
local function rate_tokens(now, n, qps, burst, lookahead, window, span)
  local interval = 1000 / qps
  local tat = tonumber(redis.call('GET', K_RATE) or '0')
  local t0 = math.max(tat, now - (burst - 1) * interval)
  -- Starts a span or more before the first token are in no span with a token.
  redis.call('ZREMRANGEBYSCORE', K_STARTS, '-inf', num_str(t0 - span))
  local logged = redis.call('ZCARD', K_STARTS)
  local tokens = {}
  -- fit returns the earliest time from t at which a call leaves fewer than window calls in the
  -- span before it.
  local function fit(t)
    if logged + #tokens < window then return t end
    for _ = 1, 8 do -- one round is enough unless late calls keep crowding the span
      local lo = t - span
      local mine = {} -- this call's tokens in the span before t, oldest first
      for i = #tokens, 1, -1 do
        if tokens[i] <= lo then break end
        table.insert(mine, 1, tokens[i])
      end
      local over = redis.call('ZCOUNT', K_STARTS, '(' .. num_str(lo), '+inf') + #mine - window + 1
      if over <= 0 then return t end
      -- The over-th oldest start of the span (merging the log and this call's tokens) must leave
      -- it; 1 µs more, so that it does whatever the rounding of t - span.
      local log = redis.call('ZRANGEBYSCORE', K_STARTS, '(' .. num_str(lo), '+inf', 'WITHSCORES', 'LIMIT', '0', int_str(over))
      local a, b, kth = 2, 1, nil
      for _ = 1, over do
        local la = tonumber(log[a])
        if la and (not mine[b] or la <= mine[b]) then
          kth, a = la, a + 2
        else
          kth, b = mine[b], b + 1
        end
      end
      t = math.max(t, kth + span + 0.001)
    end
    return t
  end
  local t = fit(t0)
  while #tokens < n and t <= now + lookahead + 1e-9 do
    tokens[#tokens + 1] = t
    t = fit(t + interval)
  end
  return tokens, t, interval
end

-- rate_log records a call started at token t in the start log.
local function rate_log(member, t)
  redis.call('ZADD', K_STARTS, num_str(t), member)
end

-- rate_store keeps next_token as the rate limit's tat, at full precision (num_str), and keeps the
-- start log as long as the tokens it can move.
local function rate_store(next_token, now, burst, interval)
  local ttl = int_str(math.ceil(next_token - now + burst * interval) + 1000)
  redis.call('SET', K_RATE, num_str(next_token), 'PX', ttl)
  redis.call('PEXPIRE', K_STARTS, ttl)
end

-- reap_slots frees up to limit slots (KEYS[13]) whose expiry has passed: their holders died or
-- hung without releasing them. Returns how many; the caller wakes the dispatchers.
local function reap_slots(now, limit)
  local gone = redis.call('ZRANGEBYSCORE', K_SLOTS, '-inf', int_str(now), 'LIMIT', '0', int_str(limit))
  if #gone == 0 then return 0 end
  for _, m in ipairs(gone) do -- one by one: unpack of a large batch overflows Lua's stack
    redis.call('ZREM', K_SLOTS, m)
    redis.call('ZREM', K_RUN, m)
  end
  redis.call('HINCRBY', K_COUNTS, 'slots_expired', int_str(#gone))
  return #gone
end

-- Fair sharing. A task's score is (255 - priority) * 2^44 + seq by default: first come, first
-- served within a priority. On an endpoint with FairShare the second term is a round instead:
-- within a priority band each subject gets one task per round, and tasks of one round start in
-- the order of their ids (ZPOPMIN orders equal scores by member; ids sort by creation). The band's
-- current round V is the highest round started in it; a new task of subject s gets round
-- max(V, s's latest round + 1). So a subject that floods the band queues its tasks in rounds
-- ahead, and another subject's next task lands in the current round: at most one task of every
-- other active subject starts before it. Rounds are counted on the seq scale (a band's first V is
-- the current seq), and a round is never above the seq of its submit, so tasks queued before
-- FairShare was switched on or off keep their place ahead of those queued after.
local BAND = 17592186044416 -- 2^44: the queue score of one priority

-- fair_score returns the queue score (a number) of a new fair task of priority pri and subject
-- subj, with seq the task's sequence number, and records the subject's round. A band without a
-- current round (new, or the key expired) starts at seq. A subject with no task waiting (KEYS[5]
-- counts them) whose latest round is ahead of the current one had its tasks cancelled or timed
-- out (unsubject drops the round then, but only in the band of its last task): it goes to the
-- next round, not behind rounds it no longer uses. (The subject '' is not counted there, so it
-- keeps its rounds.)
local function fair_score(pri, subj, seq)
  local b = 255 - pri
  local band = int_str(b)
  local member = band .. ':' .. subj
  local v = redis.call('ZSCORE', K_FAIR, band)
  if v then
    v = tonumber(v)
    local last = redis.call('ZSCORE', K_FAIR, member)
    if last then
      local after = tonumber(last) + 1
      if after > v + 1 and subj ~= '' and not redis.call('HGET', K_SUBJ, subj) then after = v + 1 end
      v = math.max(v, after)
    end
  else
    v = b * BAND + seq
    redis.call('ZADD', K_FAIR, int_str(v), band)
  end
  redis.call('ZADD', K_FAIR, int_str(v), member)
  return v
end

-- fair_started moves each band's current round up to the highest score of the fair tasks that
-- left the queue in it (tops: band -> score), and forgets the subjects whose latest round is
-- below it (max(V, their round + 1) is V for them, as for a subject never seen). A band without
-- a current round (the key expired) is left to its next submit, which sets one with the key's
-- lifetime.
local function fair_started(tops)
  for b, sc in pairs(tops) do
    local band = int_str(b)
    local v = redis.call('ZSCORE', K_FAIR, band)
    if v and tonumber(v) < sc then
      redis.call('ZADD', K_FAIR, int_str(sc), band)
      redis.call('ZREMRANGEBYSCORE', K_FAIR, int_str(b * BAND), '(' .. int_str(sc))
    end
  end
end
