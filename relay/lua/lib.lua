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
-- (Redis removes an empty key), task hashes expire, and the counters (seq, rate, ring, counts)
-- are one small key each per endpoint, deleted by maintain.lua once a deleted endpoint is empty.
--
-- Task hash fields: id ep st(status) pri sc(score) subj sq(1 while counted in subjects) ty
-- (offline|online) ca sa ea (created/started/ended ms) att (attempts started) tries m u h b
-- (method, url, headers json, body) qd (queue deadline ms) hs rh res rt (http status, result
-- headers json, result body, truncated) err dur (ms) pe (permit end ms) pu (permit used) rd (final
-- status read) ns (namespace of the submitter).
-- The keys and common arguments of the current call, set by bind.
local K_QUEUE, K_WAIT, K_DELAYED, K_RUN, K_SUBJ, K_SEQ, K_RATE, K_RING, K_COUNTS, K_ARCH, K_TASK
local WAKE, TASK_CHANNEL, ENDPOINT, FINISHED_TTL, READ_TTL, ARCH_MAX, ARCHIVE
-- What the current call counts, written once at its end (flush).
local calls_n, calls_ms, ended, ended_any

local function bind(keys, args)
  K_QUEUE, K_WAIT, K_DELAYED, K_RUN = keys[1], keys[2], keys[3], keys[4]
  K_SUBJ, K_SEQ, K_RATE, K_RING = keys[5], keys[6], keys[7], keys[8]
  K_COUNTS, K_ARCH, K_TASK = keys[9], keys[10], keys[11]
  WAKE, TASK_CHANNEL, ENDPOINT = args[1], args[2], args[3]
  FINISHED_TTL, READ_TTL = tonumber(args[4]), tonumber(args[5])
  ARCH_MAX, ARCHIVE = tonumber(args[6]), args[7] == '1'
  calls_n, calls_ms, ended, ended_any = 0, 0, {}, false
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function task_key(id) return K_TASK .. id end

local function wake() redis.call('PUBLISH', WAKE, ENDPOINT) end

local function notify_task(id, status) redis.call('PUBLISH', TASK_CHANNEL .. id, status) end

-- unsubject forgets a task in the per-subject count, given its sq and subj fields.
local function unsubject(tk, sq, subj)
  if sq == '1' and subj and subj ~= '' then
    redis.call('HSET', tk, 'sq', '0')
    if redis.call('HINCRBY', K_SUBJ, subj, -1) <= 0 then redis.call('HDEL', K_SUBJ, subj) end
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
  if extra then
    redis.call('HSET', tk, 'st', st, 'ea', now, unpack(extra))
  else
    redis.call('HSET', tk, 'st', st, 'ea', now)
  end
  redis.call('PEXPIRE', tk, FINISHED_TTL)
  if ARCHIVE then redis.call('ZADD', K_ARCH, now, id) end
  ended[st] = (ended[st] or 0) + 1
  ended_any = true
  notify_task(id, st)
end

-- flush writes what the call counted: the ended tasks by status, the archive backlog bound, and
-- the finished calls in the per-second ring (60 fields at most: second mod 60 ->
-- "second:count:total ms").
local function flush(now)
  if ended_any then
    for st, n in pairs(ended) do redis.call('HINCRBY', K_COUNTS, st, n) end
    if ARCHIVE and redis.call('ZCARD', K_ARCH) > ARCH_MAX then
      redis.call('ZREMRANGEBYRANK', K_ARCH, 0, -ARCH_MAX - 1)
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
