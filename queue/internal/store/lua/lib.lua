-- lib.lua: helpers shared by every queue script. Not a script itself: scripts.go builds a Redis
-- function library from it and the scripts (Redis 7+: the helpers are created once, at load), and,
-- for stores without FUNCTION, EVAL scripts that start with it. Either way a script's first step is
-- bind(KEYS, ARGV, codec), which points the helpers at the keys and arguments of the call.
--
-- Every queue script but the bare ones (publish_ready.lua and ack_noresult.lua: bareScripts in
-- scripts.go, which take only the keys they touch and do not call bind) receives the same KEYS, all
-- of one queue and all sharing its hash tag:
--   KEYS[1]  jobs      hash   id -> job record (cmsgpack array, see R_* below)
--   KEYS[2]  ready     prefix of the per-priority ready lists: the list of priority p is KEYS[2]..p
--   KEYS[3]  prios     zset   priorities whose ready list may be non-empty (score = priority)
--   KEYS[4]  delayed   zset   id -> due time (ms)
--   KEYS[5]  leased    zset   id -> lease end (ms)
--   KEYS[6]  expiry    zset   id -> ttl end (ms), for delayed and ready jobs with a ttl
--   KEYS[7]  dead      zset   id -> time it died (ms)
--   KEYS[8]  done      zset   id -> time it was acked with a result (ms)
--   KEYS[9]  stats     hash   counters
--   KEYS[10] meta      hash   queue settings (paused)
--   KEYS[11] unique    prefix of the unique-key strings: the key of u is KEYS[11]..u
--   KEYS[12] lease     hash   id -> '<delivery>:<start>': the delivery number holding the lease
--                             (negative: the job has a unique key) and when it was leased (ms; an
--                             entry written before starts were kept is the delivery alone).
--                             Leases live here and in 'leased', not in the record, so
--                             a consume or an ack never rewrites a record: while a job is leased its
--                             record still says ready, with the deliveries and tries of before.
--   KEYS[13] due      zset   the due index shard of the queue (keys.go, dueKey): member the notify
--                             channel (ARGV[1]), score at or before the queue's next due time
-- and the same leading ARGV:
--   ARGV[1] notify channel (PUBLISHed to when jobs become ready)
--   ARGV[2] batch: the most jobs one housekeeping step moves
--   ARGV[3] dead retention (ms)      ARGV[4] dead letter size bound
--   ARGV[5] result retention (ms)    ARGV[6] result count bound
-- Script-specific arguments start at ARGV[7].

-- The keys and common arguments of the current call, set by bind.
local K_JOBS, K_READY, K_PRIOS, K_DELAYED, K_LEASED, K_EXPIRY
local K_DEAD, K_DONE, K_STATS, K_META, K_UNIQUE, K_LEASE, K_DUE
-- The retention and bound arguments stay strings until trim needs them: turning a string into a
-- number (strtod) costs Redis about a thousand instructions, and most calls never trim.
local CHANNEL, BATCH, DEAD_RETENTION, DEAD_MAX, RESULT_RETENTION, RESULT_MAX
-- BATCH_S is BATCH as the caller sent it, a string, for the LIMIT of a redis.call (see istr).
local BATCH_S
-- notify_ready: the call made jobs ready (flush_notify PUBLISHes once at its end).
-- notify_callbacks: the call put jobs on the callback lane or scheduled a new earliest delayed
-- job (flush_notify tells the deliverers once, on the prefix's callback channel).
local notify_ready, notify_callbacks
-- call_now is the call's last now_ms (bind clears it), for lane_due.
local call_now
-- Records are cmsgpack arrays. Redis-compatible stores without cmsgpack (the in-process store the
-- server falls back to) get a plain length-prefixed codec: each field is 'n<number>;' or
-- 's<length>:<bytes>'. One store only ever holds records of one codec. bind sets msgpack to the
-- cmsgpack module, or nil for the plain codec.
local msgpack

local function bind(keys, args, codec)
  K_JOBS, K_READY, K_PRIOS, K_DELAYED = keys[1], keys[2], keys[3], keys[4]
  K_LEASED, K_EXPIRY, K_DEAD, K_DONE = keys[5], keys[6], keys[7], keys[8]
  K_STATS, K_META, K_UNIQUE, K_LEASE, K_DUE = keys[9], keys[10], keys[11], keys[12], keys[13]
  CHANNEL = args[1]
  BATCH, BATCH_S = tonumber(args[2]), args[2]
  DEAD_RETENTION, DEAD_MAX = args[3], args[4]
  RESULT_RETENTION, RESULT_MAX = args[5], args[6]
  notify_ready, notify_callbacks = false, false
  call_now = nil
  msgpack = codec
end

-- bind_ack is bind for ack_noresult.lua, a bare script: it takes only the keys that removing acked
-- jobs touches. The keys it does not pass are cleared, so a helper that needed one would fail
-- loudly rather than write to another queue's key left from an earlier call.
local function bind_ack(keys)
  K_JOBS, K_LEASE, K_LEASED, K_STATS, K_UNIQUE = keys[1], keys[2], keys[3], keys[4], keys[5]
  K_READY, K_PRIOS, K_DELAYED, K_EXPIRY, K_DEAD, K_DONE, K_META, K_DUE = nil, nil, nil, nil, nil, nil, nil, nil
  CHANNEL, BATCH, BATCH_S, DEAD_RETENTION, DEAD_MAX, RESULT_RETENTION, RESULT_MAX = nil, nil, nil, nil, nil, nil, nil
  notify_ready, notify_callbacks = false, false
  msgpack = cmsgpack
end

-- Job record fields (positions in the cmsgpack array).
local R_STATE, R_PRI, R_TRIES, R_LEFT, R_DELIVERY = 1, 2, 3, 4, 5
local R_TTL, R_EXPIRE, R_TTR, R_BBASE, R_BMAX = 6, 7, 8, 9, 10
local R_PUBLISHED, R_DUE, R_LEASE, R_UNIQUE, R_ATTRS = 11, 12, 13, 14, 15
local R_PAYLOAD, R_ERROR, R_RESULT, R_FINISHED = 16, 17, 18, 19
-- R_CALLBACK is the job's callback (JSON, '' for none). Records written before callbacks existed
-- end at R_FINISHED: decode fills the field in as ''.
local R_CALLBACK = 20
-- R_ATTEMPT is what the last failed attempt that reported itself left for the next attempt's trace
-- span to link to: '<delivery> <traceparent>' (nack.lua, only when the client traces). Absent
-- (nil) otherwise, so a record without it is the record as it was before the field existed.
local R_ATTEMPT = 21

-- States.
local S_DELAYED, S_READY, S_LEASED, S_DEAD, S_DONE = 1, 2, 3, 4, 5

-- arg_num reads a numeric argument. Most are 0 (no delay, no ttl, no backoff...): comparing with
-- the interned '0' is one pointer comparison, where tonumber calls strtod.
local function arg_num(s)
  if s == '0' then return 0 end
  return tonumber(s)
end

-- Numbers given to redis.call. Redis 7.0 turns each into a string with snprintf('%.17g') before
-- running the command: about 2,200 instructions for a small integer and 6,600 for a time in ms,
-- as much as the command itself often costs (ZADD of one member, HINCRBY). Lua's own tostring
-- costs about as much. Strings pass as they are, so the scripts hand redis.call strings: literals
-- ('0', '1'), arguments as the client sent them (BATCH_S), istr for small integers (deliveries,
-- priorities, counts) and ms_str for times (lease ends, due times, ttl ends).

-- INT_STR caches the strings of small integers. It lives as long as the function library (Redis
-- 7+), so a delivery or priority number is formatted once per library load, not per call; as an
-- EVAL script it lasts one call.
local INT_STR = {}

-- istr is integer n as a string (string.format('%d') costs a third of what Redis's conversion
-- does).
local function istr(n)
  local s = INT_STR[n]
  if s then return s end
  s = string.format('%d', n)
  if n >= -1000 and n <= 1000 then INT_STR[n] = s end
  return s
end

-- ms_str is a time in ms (an integer) as a string. The jobs of one call mostly share their times
-- (now, now + ttr for every lease, now + ttl for every expiry), so the last one is remembered.
local last_ms, last_ms_str
local function ms_str(t)
  if t ~= last_ms then last_ms, last_ms_str = t, string.format('%d', t) end
  return last_ms_str
end

-- now_ms is Redis's time in ms, rounded down: a job due at D is taken once now_ms() >= D, so never
-- before D. now_frac says whether part of the current ms had passed at the last now_ms: a delay
-- counted from now then rounds up (due_in), so that part cannot shorten it.
local now_frac = false
local function now_ms()
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  now_frac = us % 1000 ~= 0
  call_now = tonumber(t[1]) * 1000 + math.floor(us / 1000)
  return call_now
end

-- due_in is the time delay_ms after the last now_ms (now), rounded up to a whole ms.
local function due_in(now, delay_ms)
  if delay_ms > 0 and now_frac then return now + delay_ms + 1 end
  return now + delay_ms
end

-- new_job_record is the record of a new job whose 14 fields start at args[a] (publish.lua lists
-- them), published at now: delayed, or ready when due by now (a run_at, when not 0, replaces the
-- delay). publish.lua and schedule_fire.lua both make jobs with it.
local function new_job_record(args, a, now)
  local ttl = arg_num(args[a + 4])
  local due = due_in(now, arg_num(args[a + 6]))
  local run_at = arg_num(args[a + 7])
  if run_at > 0 then due = run_at end
  local state = S_DELAYED
  if due <= now then state, due = S_READY, now end
  local expire_at = 0
  if ttl > 0 then expire_at = now + ttl end
  local tries = arg_num(args[a + 3])
  return {
    state, arg_num(args[a + 2]), tries, tries, 0,
    ttl, expire_at, arg_num(args[a + 5]), arg_num(args[a + 8]), arg_num(args[a + 9]),
    now, due, 0, args[a + 10], args[a + 12],
    args[a + 1], '', '', 0, args[a + 13],
  }
end

-- due_at records in the due index that the queue has work at time t (ms): a delayed job, a lease
-- end, a ttl or a retention end. The entry only moves earlier (LT; it is added when missing), so it
-- stays at or before the queue's next due time whatever the order of calls; maintain.lua sets it
-- to that time, or removes it, once it has done what was due.
local function due_at(t)
  redis.call('ZADD', K_DUE, 'LT', ms_str(t), CHANNEL)
end

-- lane_key is the shard of the callback lanes' due index in the queue's hash slot (keys.go,
-- laneDueKey): the queues' due index shard (K_DUE, '<prefix>:due' or '<prefix>:due:{t}') with
-- 'callbacks:due' for 'due', so the same slot. Like callbacks_key it is not passed in KEYS: every
-- position is taken, and only the calls that touch a callback lane need it.
local function lane_key()
  local prefix, shard = string.match(K_DUE, '^(.*):due(.*)$')
  return prefix .. ':callbacks:due' .. shard
end

-- lane_due records in the callback lanes' due index that the queue's callback lane has work for a
-- deliverer at time t (ms): a callback job on the lane (now) or a delayed callback job (its due
-- time). The entry only moves earlier (LT), as due_at's; consume_callbacks.lua, the deliverer's
-- visit, sets it to the lane's next work or removes it. A deliverer reads only the due entries,
-- so idle lanes cost it nothing.
local function lane_due(t)
  redis.call('ZADD', lane_key(), 'LT', ms_str(t or call_now or now_ms()), CHANNEL)
end

-- due_after records a retention end: t + retention (a string of ms; '0' keeps no time bound).
local function due_after(t, retention)
  local r = arg_num(retention)
  if r > 0 then due_at(t + r) end
end

local function pack_plain(rec)
  local parts = {}
  local last = R_CALLBACK
  if rec[R_ATTEMPT] then last = R_ATTEMPT end
  for i = 1, last do
    local v = rec[i]
    if type(v) == 'number' then
      parts[i] = 'n' .. string.format('%.0f', v) .. ';'
    else
      parts[i] = 's' .. #v .. ':' .. v
    end
  end
  return table.concat(parts)
end

local function unpack_plain(raw)
  local rec, pos = {}, 1
  for i = 1, R_ATTEMPT do
    if pos > #raw then
      if i <= R_CALLBACK then rec[i] = '' end
      break
    end
    local tag = string.sub(raw, pos, pos)
    if tag == 'n' then
      local stop = string.find(raw, ';', pos, true)
      rec[i] = tonumber(string.sub(raw, pos + 1, stop - 1))
      pos = stop + 1
    else
      local colon = string.find(raw, ':', pos, true)
      local len = tonumber(string.sub(raw, pos + 1, colon - 1))
      rec[i] = string.sub(raw, colon + 1, colon + len)
      pos = colon + len + 1
    end
  end
  return rec
end

local function decode(raw)
  local rec
  if msgpack then rec = msgpack.unpack(raw) else rec = unpack_plain(raw) end
  if rec[R_CALLBACK] == nil then rec[R_CALLBACK] = '' end
  return rec
end

-- callbacks_key is the queue's callback lane: a list of the ready jobs that carry a callback, FIFO,
-- named KEYS[2]..'callbacks' (beside the per-priority ready lists KEYS[2]..p, and like them not
-- passed in KEYS: same hash tag, so the same slot). Only the callback deliverer reads it
-- (consume_callbacks.lua); ordinary consumers never see these jobs, and their scripts neither
-- look at the list nor pay for one more key in every call.
local function callbacks_key()
  return K_READY .. 'callbacks'
end

-- has_callback: the job is delivered by the callback deliverer, not handed to consumers.
local function has_callback(rec)
  return rec[R_CALLBACK] ~= ''
end

local function encode(rec)
  if msgpack then return msgpack.pack(rec) end
  return pack_plain(rec)
end

local function load(id)
  local raw = redis.call('HGET', K_JOBS, id)
  if not raw then return nil end
  return decode(raw)
end

local function save(id, rec)
  redis.call('HSET', K_JOBS, id, encode(rec))
end

-- call_batched runs one variadic command (HSET key f v f v ..., ZADD key s m ..., HDEL key f ...)
-- with the collected arguments, in chunks that stay within Lua's stack limit. Returns the reply of
-- the last chunk.
local function call_batched(cmd, key, args, step)
  local chunk = 4000 - (4000 % step)
  local reply
  for i = 1, #args, chunk do
    reply = redis.call(cmd, key, unpack(args, i, math.min(i + chunk - 1, #args)))
  end
  return reply
end

local function count(field, n)
  if n ~= 0 then redis.call('HINCRBY', K_STATS, field, istr(n)) end
end

-- push_ready appends a job to the tail of its priority's ready list (head when front is true).
-- A job with a callback goes to the callback lane instead, whatever its priority.
-- Only a push into an empty ready list adds the priority to prios and wakes consumers: a list that
-- was not empty is in prios already, and no consumer that could take the job waits on its queue,
-- since a consumer blocks only after it subscribed and then saw every ready list empty (or the
-- queue paused: Resume wakes those), and the push that made the list non-empty since woke it.
local function push_ready(id, rec, front)
  rec[R_STATE] = S_READY
  if rec[R_EXPIRE] > 0 then
    redis.call('ZADD', K_EXPIRY, ms_str(rec[R_EXPIRE]), id)
    due_at(rec[R_EXPIRE])
  end
  if has_callback(rec) then
    if front then
      redis.call('LPUSH', callbacks_key(), id)
    else
      redis.call('RPUSH', callbacks_key(), id)
    end
    lane_due(nil)
    notify_callbacks = true
    return
  end
  local pri = istr(rec[R_PRI])
  local len
  if front then
    len = redis.call('LPUSH', K_READY .. pri, id)
  else
    len = redis.call('RPUSH', K_READY .. pri, id)
  end
  if len == 1 then
    redis.call('ZADD', K_PRIOS, pri, pri)
    notify_ready = true
  end
end

-- append_to appends id to the list lists[key], making it if needed.
local function append_to(lists, key, id)
  local list = lists[key]
  if not list then
    list = {}
    lists[key] = list
  end
  list[#list + 1] = id
end

-- push_ready_lists appends each list of ids in lists (priority as a string -> ids, in order) to the
-- tail of that priority's ready list, named ready .. priority, and adds to the zset prios the
-- priorities whose ready list was empty before. Returns whether any was: consumers must then be
-- woken (see push_ready).
local function push_ready_lists(ready, prios, lists)
  local started = {}
  for pri, list in pairs(lists) do
    if call_batched('RPUSH', ready .. pri, list, 1) == #list then
      started[#started + 1] = pri
      started[#started + 1] = pri
    end
  end
  if #started == 0 then return false end
  call_batched('ZADD', prios, started, 2)
  return true
end

-- push_delayed schedules a job; it wakes blocked consumers only when it is the new earliest job,
-- since they already sleep until the old earliest one.
local function push_delayed(id, rec, due)
  local head = redis.call('ZRANGE', K_DELAYED, '0', '0', 'WITHSCORES')
  redis.call('ZADD', K_DELAYED, ms_str(due), id)
  rec[R_STATE] = S_DELAYED
  rec[R_DUE] = due
  if rec[R_EXPIRE] > 0 then redis.call('ZADD', K_EXPIRY, ms_str(rec[R_EXPIRE]), id) end
  if rec[R_EXPIRE] > 0 and rec[R_EXPIRE] < due then due_at(rec[R_EXPIRE]) else due_at(due) end
  if has_callback(rec) then lane_due(due) end
  if head[2] == nil or due < tonumber(head[2]) then
    if has_callback(rec) then
      notify_callbacks = true
    else
      redis.call('PUBLISH', CHANNEL, 'd')
    end
  end
end

local function release_unique(id, rec)
  local u = rec[R_UNIQUE]
  if u ~= '' and redis.call('GET', K_UNIQUE .. u) == id then
    redis.call('DEL', K_UNIQUE .. u)
  end
end

-- unlink removes a job from the structure its state puts it in (not from the jobs hash).
local function unlink(id, rec)
  local st = rec[R_STATE]
  if st == S_READY then
    if redis.call('HDEL', K_LEASE, id) == 1 then
      redis.call('ZREM', K_LEASED, id)
    elseif has_callback(rec) then
      redis.call('LREM', callbacks_key(), 1, id)
    else
      local list = K_READY .. istr(rec[R_PRI])
      redis.call('LREM', list, 1, id)
      if redis.call('LLEN', list) == 0 then redis.call('ZREM', K_PRIOS, istr(rec[R_PRI])) end
    end
  elseif st == S_DELAYED then
    redis.call('ZREM', K_DELAYED, id)
  elseif st == S_LEASED then
    redis.call('HDEL', K_LEASE, id)
    redis.call('ZREM', K_LEASED, id)
  elseif st == S_DEAD then
    redis.call('ZREM', K_DEAD, id)
  elseif st == S_DONE then
    redis.call('ZREM', K_DONE, id)
  end
  redis.call('ZREM', K_EXPIRY, id)
end

-- forget removes a job entirely.
local function forget(id, rec)
  unlink(id, rec)
  release_unique(id, rec)
  redis.call('HDEL', K_JOBS, id)
end

-- trim keeps a finished-jobs zset (dead or done) within its retention and size bound.
local function trim(zset, now, retention, max, dropped_field)
  retention, max = tonumber(retention), tonumber(max)
  local dropped = 0
  local old = redis.call('ZRANGEBYSCORE', zset, '-inf', ms_str(now - retention), 'LIMIT', '0', BATCH_S)
  for _, id in ipairs(old) do
    redis.call('HDEL', K_JOBS, id)
    redis.call('ZREM', zset, id)
    dropped = dropped + 1
  end
  local over = redis.call('ZCARD', zset) - max
  if over > 0 then
    if over > BATCH then over = BATCH end
    local popped = redis.call('ZPOPMIN', zset, istr(over))
    for i = 1, #popped, 2 do
      redis.call('HDEL', K_JOBS, popped[i])
      dropped = dropped + 1
    end
  end
  if dropped_field then count(dropped_field, dropped) end
  return dropped
end

local function to_dead(id, rec, now, reason)
  rec[R_STATE] = S_DEAD
  rec[R_FINISHED] = now
  if reason then rec[R_ERROR] = reason end
  redis.call('ZREM', K_EXPIRY, id)
  release_unique(id, rec)
  save(id, rec)
  redis.call('ZADD', K_DEAD, ms_str(now), id)
  due_after(now, DEAD_RETENTION)
  count('dead_lettered', 1)
  trim(K_DEAD, now, DEAD_RETENTION, DEAD_MAX, 'dead_dropped')
end

-- dead_targets returns the ids a dead-letter call names, args[first] on, or when it names none the
-- limit oldest dead jobs.
local function dead_targets(args, first, limit)
  if #args < first then return redis.call('ZRANGE', K_DEAD, 0, limit - 1) end
  local ids = {}
  for i = first, #args do ids[#ids + 1] = args[i] end
  return ids
end

local function expire(id, rec)
  forget(id, rec)
  count('expired', 1)
end

-- BACKOFF_CAP_MS bounds any backoff delay: 7 days.
local BACKOFF_CAP_MS = 7 * 24 * 3600 * 1000

-- backoff_ms is the job's own retry delay for its next try: base * 2^(tries used - 1), capped.
local function backoff_ms(rec)
  local base = rec[R_BBASE]
  if base <= 0 then return 0 end
  local used = rec[R_TRIES] - rec[R_LEFT]
  if used < 1 then used = 1 end
  local d = base * (2 ^ (used - 1))
  if rec[R_BMAX] > 0 and d > rec[R_BMAX] then d = rec[R_BMAX] end
  -- Without a max the doubling would soon put the retry out of reach (and past what a score can
  -- hold exactly): never wait more than BACKOFF_CAP_MS.
  if d > BACKOFF_CAP_MS then d = BACKOFF_CAP_MS end
  return math.floor(d)
end

-- retry_or_dead ends a delivery that failed (nack or lease expiry): another try after delay_ms when
-- tries are left and the ttl allows, else the dead letter. Returns 'retried', 'dead' or 'expired'.
local function retry_or_dead(id, rec, now, delay_ms, reason)
  if rec[R_LEFT] <= 0 then
    to_dead(id, rec, now, reason)
    return 'dead'
  end
  local due = due_in(now, delay_ms)
  if rec[R_EXPIRE] > 0 and rec[R_EXPIRE] <= due then
    expire(id, rec)
    return 'expired'
  end
  rec[R_ERROR] = reason or rec[R_ERROR]
  rec[R_LEASE] = 0
  if delay_ms > 0 then
    push_delayed(id, rec, due)
  else
    rec[R_DUE] = now
    push_ready(id, rec, false)
  end
  save(id, rec)
  count('retried', 1)
  return 'retried'
end

-- lease_split reads a lease hash entry (KEYS[12]): the delivery as stored (a string, negative for
-- a job with a unique key) and the time the lease started (ms), or nil for an entry written
-- before starts were kept.
local function lease_split(v)
  local at = string.find(v, ':', 2, true)
  if not at then return v, nil end
  return string.sub(v, 1, at - 1), tonumber(string.sub(v, at + 1))
end

-- lease_of returns the delivery number holding a job's lease and whether the job has a unique key,
-- or nil when the job is not leased.
local function lease_of(id)
  local v = redis.call('HGET', K_LEASE, id)
  if not v then return nil end
  local d = lease_split(v)
  d = tonumber(d)
  if d < 0 then return -d, true end
  return d, false
end

-- end_lease folds a lease that ended by nack or expiry into the record (in memory): the delivery
-- number and the try it used. The caller has removed the lease entries.
local function end_lease(rec, delivery)
  rec[R_STATE] = S_LEASED
  rec[R_DELIVERY] = delivery
  rec[R_LEFT] = rec[R_LEFT] - 1
end

-- as_leased shows a leased job's record as it stands during the lease (for replies only).
local function as_leased(rec, delivery, lease_until)
  rec[R_STATE] = S_LEASED
  rec[R_DELIVERY] = delivery
  rec[R_LEFT] = rec[R_LEFT] - 1
  rec[R_LEASE] = lease_until
end

-- fail_delivery ends a delivery that failed (nack.lua, callback_finish.lua), its lease entries
-- already removed: its try is used, and the job goes to the dead letter at once when no_retry is
-- '1', else it is tried again after delay_arg ms ('-1': its backoff) while tries are left.
-- Returns 'retried', 'dead' or 'expired'.
local function fail_delivery(id, rec, delivery, now, reason, delay_arg, no_retry)
  end_lease(rec, delivery)
  count('nacked', 1)
  if no_retry == '1' then
    to_dead(id, rec, now, reason)
    return 'dead'
  end
  local delay = tonumber(delay_arg)
  if delay < 0 then delay = backoff_ms(rec) end
  return retry_or_dead(id, rec, now, delay, reason)
end

-- leased_view is a leased job's record as its lease shows it (as_leased), for the listing scripts,
-- or nil when Get would answer it as gone (past its ttl, and its lease ended) or it is not leased.
local function leased_view(id, lease_until, now)
  local rec = load(id)
  local delivery = lease_of(id)
  if not (rec and delivery) then return nil end
  if rec[R_EXPIRE] > 0 and rec[R_EXPIRE] <= now and lease_until <= now then return nil end
  as_leased(rec, delivery, lease_until)
  return rec
end

-- reap_lease ends a lease whose time is up as a failed try: the job is retried while it has tries
-- and its ttl allows, else it goes dead (or expires). Returns the record as it now is, or nil when
-- the job is gone.
local function reap_lease(id, now)
  local delivery = lease_of(id)
  local rec = load(id)
  redis.call('ZREM', K_LEASED, id)
  redis.call('HDEL', K_LEASE, id)
  if not (rec and delivery) then return nil end
  end_lease(rec, delivery)
  if rec[R_EXPIRE] > 0 and rec[R_EXPIRE] <= now then
    expire(id, rec)
    return nil
  end
  if retry_or_dead(id, rec, now, backoff_ms(rec), 'lease expired') == 'expired' then return nil end
  return rec
end

-- unique_holder returns the pending job (delayed, ready or leased) holding unique key u, or nil
-- when none does. It first settles what time changed for the holder that housekeeping has not done
-- yet: past its ttl a waiting holder expires (it is gone), and a lease that ended is a failed try
-- (a leased job's ttl does not apply). fresh, when given, maps the ids of jobs the current call
-- wrote to their records: such a holder is taken as it is, since nothing has changed it yet.
-- publish.lua and dead_respawn.lua both take a key only when this finds no holder.
local function unique_holder(u, now, fresh)
  local holder = redis.call('GET', K_UNIQUE .. u)
  if not holder then return nil end
  local mine = fresh and fresh[holder]
  local h = mine or load(holder)
  local lease_end = h and not mine and redis.call('ZSCORE', K_LEASED, holder)
  if lease_end then
    if tonumber(lease_end) <= now then h = reap_lease(holder, now) end
  elseif h and h[R_EXPIRE] > 0 and h[R_EXPIRE] <= now
      and (h[R_STATE] == S_DELAYED or h[R_STATE] == S_READY) then
    expire(holder, h)
    h = nil
  end
  if h and h[R_STATE] ~= S_DEAD and h[R_STATE] ~= S_DONE then return holder end
  return nil
end

-- housekeeping moves what time has changed, at most BATCH jobs of each kind: jobs past their ttl
-- disappear, due delayed jobs become ready, expired leases are retried or dead-lettered.
local function housekeeping(now)
  local ids = redis.call('ZRANGEBYSCORE', K_EXPIRY, '-inf', ms_str(now), 'LIMIT', '0', BATCH_S)
  for _, id in ipairs(ids) do
    local rec = load(id)
    if rec then expire(id, rec) else redis.call('ZREM', K_EXPIRY, id) end
  end
  ids = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', ms_str(now), 'LIMIT', '0', BATCH_S)
  for _, id in ipairs(ids) do
    redis.call('ZREM', K_DELAYED, id)
    local rec = load(id)
    if rec then
      push_ready(id, rec, false)
      save(id, rec)
    end
  end
  local promoted = #ids
  ids = redis.call('ZRANGEBYSCORE', K_LEASED, '-inf', ms_str(now), 'LIMIT', '0', BATCH_S)
  for _, id in ipairs(ids) do reap_lease(id, now) end
  return promoted, #ids
end

-- next_wake is when time next changes something a consumer could take: the earliest due delayed job
-- or lease end (-1 when there is none).
local function next_wake()
  local w = -1
  local d = redis.call('ZRANGE', K_DELAYED, '0', '0', 'WITHSCORES')
  if d[2] then w = tonumber(d[2]) end
  local l = redis.call('ZRANGE', K_LEASED, '0', '0', 'WITHSCORES')
  if l[2] and (w < 0 or tonumber(l[2]) < w) then w = tonumber(l[2]) end
  return w
end

-- lane_settle sets the queue's entry in the callback lanes' due index from the lane's state: now
-- when jobs wait on it (waiting), else its next wake (wake: a delayed job or a lease end, next_wake)
-- or no entry when nothing is scheduled. Only the calls that know that state set it:
-- consume_callbacks.lua (a deliverer's visit) and callback_finish.lua (a try's end, so a lane
-- whose last job was delivered is not visited again at that job's lease end).
local function lane_settle(now, waiting, wake)
  if waiting then
    redis.call('ZADD', lane_key(), ms_str(now), CHANNEL)
  elseif wake >= 0 then
    redis.call('ZADD', lane_key(), ms_str(wake), CHANNEL)
  else
    redis.call('ZREM', lane_key(), CHANNEL)
  end
end

-- The callback channel is one per prefix ('<prefix>:callbacks:notify', callbackChannel in Go), so
-- a deliverer subscribes once for every queue; the message names the queue by its hash tag
-- ('{ns:q}'). It is derived from the queue's own channel ('<prefix>:{ns:q}:notify') because a
-- channel is not a key and cannot travel in KEYS, and every ARGV position is taken.
local function flush_notify()
  if notify_ready then redis.call('PUBLISH', CHANNEL, 'r') end
  if notify_callbacks then
    local prefix, tag = string.match(CHANNEL, '^(.-):({.*}):notify$')
    redis.call('PUBLISH', prefix .. ':callbacks:notify', tag)
  end
end

-- reply_job flattens a job for the Go side (parseJob in job.go reads the same order).
local function reply_job(out, id, rec, position)
  local n = #out
  out[n + 1] = id
  out[n + 2] = rec[R_STATE]
  out[n + 3] = rec[R_PRI]
  out[n + 4] = rec[R_TRIES]
  out[n + 5] = rec[R_LEFT]
  out[n + 6] = rec[R_DELIVERY]
  out[n + 7] = rec[R_TTL]
  out[n + 8] = rec[R_EXPIRE]
  out[n + 9] = rec[R_TTR]
  out[n + 10] = rec[R_PUBLISHED]
  out[n + 11] = rec[R_DUE]
  out[n + 12] = rec[R_LEASE]
  out[n + 13] = rec[R_UNIQUE]
  out[n + 14] = rec[R_ATTRS]
  out[n + 15] = rec[R_PAYLOAD]
  out[n + 16] = rec[R_ERROR]
  out[n + 17] = rec[R_RESULT]
  out[n + 18] = rec[R_FINISHED]
  out[n + 19] = position or -1
  out[n + 20] = rec[R_BBASE]
  out[n + 21] = rec[R_BMAX]
  out[n + 22] = rec[R_CALLBACK]
end

-- lease_fields reads from a stored record only what leasing it needs: R_DELIVERY, R_EXPIRE, R_TTR
-- and R_UNIQUE. cmsgpack.unpack_limit decodes the record's first fields one by one from just after
-- the array header (0xdc and a two-byte count: records have 19 or 20 fields), without building
-- the record's table or its payload string: a fifth of what cmsgpack.unpack costs. A store whose
-- cmsgpack lacks unpack_limit, and any record not in that form, take the whole decode.
local function lease_fields(raw)
  if msgpack and msgpack.unpack_limit and string.byte(raw, 1) == 0xdc then
    local _, _, _, _, _, delivery, _, expire, ttr, _, _, _, _, _, unique = msgpack.unpack_limit(raw, R_UNIQUE, 3)
    return delivery, expire, ttr, unique
  end
  local rec = decode(raw)
  return rec[R_DELIVERY], rec[R_EXPIRE], rec[R_TTR], rec[R_UNIQUE]
end

-- ready_since is when a stored record became ready, as far as the record says: its due time or,
-- when later, its publish time (ms). Like lease_fields it decodes only the first fields.
local function ready_since(raw)
  local published, due
  if msgpack and msgpack.unpack_limit and string.byte(raw, 1) == 0xdc then
    local _, _, _, _, _, _, _, _, _, _, _, p, d = msgpack.unpack_limit(raw, R_DUE, 3)
    published, due = p, d
  else
    local rec = decode(raw)
    published, due = rec[R_PUBLISHED], rec[R_DUE]
  end
  return math.max(published or 0, due or 0)
end

-- lease_popped leases the jobs just popped from a ready list or the callback lane: each gets a new
-- delivery and its lease (ttr ms, or its own TTR when ttr <= 0); a job past its ttl is expired
-- instead. Each leased job adds four fields to out (parseLeased in job.go reads them): id, the
-- record as stored (as it was before this lease), the delivery and the lease end. The client
-- decodes the record and applies the lease to it, which costs Redis far less than 22 fields made
-- in Lua (reply_job) would. Returns how many were leased and how many were expired.
local function lease_popped(out, ids, now, ttr)
  local raws = redis.call('HMGET', K_JOBS, unpack(ids))
  local holders, leases, unexpire = {}, {}, {}
  local got, skipped, first_end = 0, 0, nil
  local started = ':' .. ms_str(now)
  for i, id in ipairs(ids) do
    local raw = raws[i]
    local delivery, expire_at, own_ttr, unique
    if raw then delivery, expire_at, own_ttr, unique = lease_fields(raw) end
    if raw and expire_at > 0 and expire_at <= now then
      expire(id, decode(raw))
      skipped = skipped + 1
    elseif raw then
      local lease = ttr
      if lease <= 0 then lease = own_ttr end
      delivery = delivery + 1
      holders[#holders + 1] = id
      if unique ~= '' then
        holders[#holders + 1] = istr(-delivery) .. started
      else
        holders[#holders + 1] = istr(delivery) .. started
      end
      leases[#leases + 1] = ms_str(now + lease)
      if not first_end or now + lease < first_end then first_end = now + lease end
      leases[#leases + 1] = id
      if expire_at > 0 then unexpire[#unexpire + 1] = id end
      local n = #out
      out[n + 1] = id
      out[n + 2] = raw
      out[n + 3] = delivery
      out[n + 4] = now + lease
      got = got + 1
    end
  end
  if #holders > 0 then
    call_batched('HSET', K_LEASE, holders, 2)
    call_batched('ZADD', K_LEASED, leases, 2)
    due_at(first_end)
  end
  if #unexpire > 0 then call_batched('ZREM', K_EXPIRY, unexpire, 1) end
  return got, skipped
end

-- leases_of reads the lease of each of ids: the delivery holding it (negative: the job has a unique
-- key) and its end, false where there is none. It reads in chunks that stay within Lua's stack
-- limit (AckMany has no count limit).
local function leases_of(ids)
  local held, ends = {}, {}
  local n = #ids
  for i = 1, n, 4000 do
    local j = math.min(i + 3999, n)
    local h = redis.call('HMGET', K_LEASE, unpack(ids, i, j))
    local e = redis.call('ZMSCORE', K_LEASED, unpack(ids, i, j))
    for k = 1, j - i + 1 do
      held[i + k - 1] = h[k]
      ends[i + k - 1] = e[k]
    end
  end
  return held, ends
end

-- not_acked is the code of an ack whose delivery holds no running lease (ack.lua): 0 when the job
-- is gone, -1 when it is there (the lease expired, or another delivery holds it).
local function not_acked(id)
  if redis.call('HEXISTS', K_JOBS, id) == 0 then return 0 end
  return -1
end

-- Processing times: an ack counts the time from its lease's start to now in the stats hash's
-- field 'pt:<b>' (the histogram queue.ProcessingTimes reads), b the bucket of that many ms:
-- PT_STEPS buckets per doubling (bucket b holds [2^(b/PT_STEPS), 2^((b+1)/PT_STEPS)) ms, bucket 0
-- also less than 1 ms), so a quantile read from them is within 9% of the true one. A queue's
-- histogram has at most one field per bucket hit (about 110 up to a day), however many acks.
local PT_STEPS = 4
local PT_SCALE = 5.770780163555854 -- PT_STEPS / ln 2 (math is not there while the library loads)
local PT_FIELD = {}

-- ack_times adds the processing times of the acks whose leases started at starts (nil: unknown)
-- to the histogram: one HINCRBY per bucket the call's acks fall in (one for most calls).
local function ack_times(starts, n, now)
  local buckets, order = {}, {}
  for i = 1, n do
    local st = starts[i]
    if st then
      local ms = now - st
      local b = 0
      if ms > 1 then b = math.floor(math.log(ms) * PT_SCALE) end
      if buckets[b] then
        buckets[b] = buckets[b] + 1
      else
        buckets[b] = 1
        order[#order + 1] = b
      end
    end
  end
  for _, b in ipairs(order) do
    local f = PT_FIELD[b]
    if not f then
      f = 'pt:' .. istr(b)
      PT_FIELD[b] = f
    end
    redis.call('HINCRBY', K_STATS, f, istr(buckets[b]))
  end
end

-- end_acked_leases removes the leases of the acked jobs, counts them, and adds their processing
-- times (starts[i] is when acked[i]'s lease started, or nil) to the histogram.
local function end_acked_leases(acked, starts, now)
  if #acked == 0 then return end
  call_batched('HDEL', K_LEASE, acked, 1)
  call_batched('ZREM', K_LEASED, acked, 1)
  count('acked', #acked)
  ack_times(starts, #acked, now)
end

-- ack_deliveries finishes the deliveries named in args from index first on, two entries each: id,
-- delivery (> 0, or '0' to finish the job whatever its delivery: lmstfy's ack). An acked job is
-- removed at once: none of these acks keeps a result. It appends one code per ack to out: 1 acked,
-- 0 no such job, -1 lease lost (expired, or another delivery holds it), and 2 for an ack left to
-- ack.lua: a finish (delivery '0') of a job under no running lease, which deletes the job wherever
-- it waits (keys ack_noresult.lua does not take). Later acks of that job in the call get 0, as
-- ack.lua answers them once it has deleted the job. ack_noresult.lua is this alone; consume.lua
-- runs it before it leases, for the acks that share its call.
local function ack_deliveries(out, args, first, now)
  local base = #out
  local n = (#args - first + 1) / 2
  if n < 1 then return end
  local ids = {}
  for i = 1, n do ids[i] = args[first + i * 2 - 2] end
  local held, ends = leases_of(ids)
  local acked, starts, seen = {}, {}, {}
  for i = 1, n do
    local id = ids[i]
    -- The lease hash holds the delivery as lease_popped wrote it (istr, negated for a job with a
    -- unique key) and the client sends it in the same decimal form, so the two compare as strings:
    -- converting both to numbers cost Redis more than the rest of the check.
    local held_by, want = held[i], args[first + i * 2 - 1]
    local mine, unique, start = false, false, nil
    if held_by then
      held_by, start = lease_split(held_by)
      unique = string.byte(held_by) == 45 -- '-'
      mine = want == '0' or held_by == want or (unique and held_by == '-' .. want)
    end
    local live = mine and ends[i] and tonumber(ends[i]) > now
    local code
    if live and not seen[id] then
      seen[id] = true
      acked[#acked + 1] = id
      starts[#acked] = start
      code = 1
      if unique then release_unique(id, load(id)) end
    elseif seen[id] then
      -- Acked or left to ack.lua earlier in this call (a combined batch naming the job twice):
      -- gone, as it would be for a call that came after.
      code = 0
    elseif want == '0' then
      seen[id] = true
      code = 2
    else
      code = not_acked(id)
    end
    out[base + i] = code
  end
  end_acked_leases(acked, starts, now)
  if #acked > 0 then call_batched('HDEL', K_JOBS, acked, 1) end
end

-- check_lease validates a delivery named by nack, touch or release. Returns the record and whether
-- the job has a unique key, or nil and the reason: 'not_found' or 'lease_lost'.
local function check_lease(id, delivery, now)
  local held, unique = lease_of(id)
  if held == delivery then
    local until_ms = redis.call('ZSCORE', K_LEASED, id)
    local rec = load(id)
    if rec and until_ms and tonumber(until_ms) > now then return rec, unique end
  end
  if redis.call('HEXISTS', K_JOBS, id) == 0 then return nil, 'not_found' end
  return nil, 'lease_lost'
end

-- take_lease is check_lease for a call that ends the lease (nack, release): on success it also
-- removes the lease entries, leaving the record to the caller.
local function take_lease(id, delivery, now)
  local rec, why = check_lease(id, delivery, now)
  if rec then
    redis.call('HDEL', K_LEASE, id)
    redis.call('ZREM', K_LEASED, id)
  end
  return rec, why
end
