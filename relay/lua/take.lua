-- take.lua: start the next tasks of an endpoint, as many as its limits allow right now. Taking a
-- QPS token (GCRA), a concurrency slot and a task happen together, so no limit is checked in one
-- call and used in another.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] most tasks to take  [9] concurrency  [10] qps (0: no rate limit), as the caller spaces
-- calls (the caller keeps a margin below the endpoint's QPS for the jitter of starting a call)
-- ARGV[11] burst: calls the rate limit lets through at once (>= 1)
-- ARGV[12] lease of an offline call (ms)  [13] permit lifetime of an online task (ms)
-- ARGV[14] lookahead (ms): rate-limit tokens due within it may be taken now; each such task
-- says how long its caller waits before the call (so calls keep their exact spacing even when
-- the dispatcher comes back late; the concurrency slot is held from now)
-- ARGV[15] most offline tasks to take (the caller's free workers; online tasks need none)
-- ARGV[16] window: most calls the rate limit lets into one sliding second (the QPS, rounded up)
-- ARGV[17] span (ms) of the start log's check: a second and a little (relay's logSpan)
-- Returns {hint, n, then, when n > 0, Redis's time in µs and n offline tasks of 8 fields: id,
-- attempt, tries, method, url, headers, body, delay (µs from that time rounded down to the ms, to
-- the call's start)}. n counts only offline tasks (online ones become permitted
-- here and need no call).
-- hint: 0 call again now (more may be startable); > 0 ms until the rate limit or a retry lets
-- the next task start; -1 nothing to do until a task or a slot is freed (a wake-up says so);
-- -2 the next task is an offline one and the caller has no free worker for it.
local tm = redis.call('TIME')
local now_us = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local now = math.floor(now_us / 1000) -- as now_ms()
-- Retries whose backoff ended go back to their place in the queue.
local now_s = int_str(now)
local due = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now_s, 'LIMIT', '0', '100')
for _, id in ipairs(due) do
  redis.call('ZREM', K_DELAYED, id)
  if redis.call('HGET', task_key(id), 'st') == 'pending' then requeue(id) end
end
local function idle_hint()
  local first = redis.call('ZRANGE', K_DELAYED, '0', '0', 'WITHSCORES')
  if first[2] then return math.max(1, tonumber(first[2]) - now) end
  return -1
end
local want = tonumber(ARGV[8])
local free = tonumber(ARGV[9]) - redis.call('ZCARD', K_RUN)
if redis.call('ZCARD', K_QUEUE) == 0 then return {idle_hint(), 0} end
-- Full: slots whose holders died (slot_take.lua) free theirs at their expiry.
if free <= 0 and reap_slots(now, 100) > 0 then free = tonumber(ARGV[9]) - redis.call('ZCARD', K_RUN) end
if free <= 0 then return {-1, 0} end
local n = math.min(want, free)
local qps, burst, lookahead = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[14])
-- GCRA and the start log (lib.lua rate_tokens): tokens are the start times of the calls this step
-- may start.
local interval, tokens, next_token = 0, nil, now
if qps > 0 then
  tokens, next_token, interval = rate_tokens(now, n, qps, burst, lookahead, tonumber(ARGV[16]), tonumber(ARGV[17]))
  if #tokens == 0 then return {math.max(1, math.ceil(next_token - lookahead - now)), 0} end
  n = #tokens
end
local lease, permit_ttl = tonumber(ARGV[12]), tonumber(ARGV[13])
local max_offline = tonumber(ARGV[15])
local popped = redis.call('ZPOPMIN', K_QUEUE, int_str(n))
local out = {0, 0, now_us}
local started, offline = 0, 0
local blocked = false
local fair_tops = nil -- band -> highest score of the fair tasks that left the queue (lib.lua)
for i = 1, #popped, 2 do
  local id = popped[i]
  local tk = task_key(id)
  local v = redis.call('HMGET', tk, 'st', 'ty', 'qd', 'att', 'tries', 'm', 'u', 'h', 'b', 'sq', 'subj', 'fr')
  local timed_out = tonumber(v[3] or '0') < now and tonumber(v[4] or '0') == 0
  if v[1] == 'pending' and not timed_out and v[2] ~= 'online' and offline >= max_offline then
    -- No worker for it: it and the rest go back to their places.
    for j = i, #popped, 2 do redis.call('ZADD', K_QUEUE, popped[j + 1], popped[j]) end
    blocked = true
    break
  end
  if v[12] == '1' then
    local sc = tonumber(popped[i + 1])
    local b = math.floor(sc / BAND)
    fair_tops = fair_tops or {}
    if sc > (fair_tops[b] or 0) then fair_tops[b] = sc end
  end
  if v[1] == 'pending' then
    redis.call('ZREM', K_WAIT, id)
    unsubject(tk, v[10], v[11], not timed_out)
    if timed_out then
      finish(id, 'timeout', now)
    else
      local delay = 0
      local att = tonumber(v[4]) + 1
      if tokens then
        delay = math.max(0, tokens[started + 1] - now)
        rate_log(id .. '#' .. att, tokens[started + 1])
      end
      started = started + 1
      -- The task hash lives until its queue deadline plus the finished retention; a task that
      -- starts close to (or, retried, after) its deadline gets the time its call may take. The
      -- delay is fractional (rate-limit tokens are), and PEXPIRE takes whole ms only: a fraction
      -- made it fail, which ended this script after the tasks were popped and lost them.
      local hold = (v[2] == 'online') and permit_ttl or lease
      if tonumber(v[3]) - now < delay + hold then
        redis.call('PEXPIRE', tk, int_str(math.ceil(delay + hold) + FINISHED_TTL))
      end
      if v[2] == 'online' then
        -- The permit's end in whole ms (the client reads it as an integer; a fraction made every
        -- permit taken within the lookahead look expired), rounded up so it keeps all its time.
        local pe = int_str(math.ceil(now + delay + permit_ttl))
        redis.call('HSET', tk, 'st', 'permitted', 'sa', now_s, 'att', int_str(att), 'pe', pe, 'pu', '0')
        redis.call('ZADD', K_RUN, pe, id)
        notify_task(id, 'permitted')
      else
        redis.call('HSET', tk, 'st', 'processing', 'sa', int_str(math.floor(now + delay)), 'att', int_str(att))
        redis.call('ZADD', K_RUN, now + delay + lease, id)
        offline = offline + 1
        local o = #out
        out[o + 1], out[o + 2], out[o + 3], out[o + 4] = id, att, v[5], v[6]
        out[o + 5], out[o + 6], out[o + 7], out[o + 8] = v[7], v[8], v[9], math.floor(delay * 1000)
      end
    end
  end
end
if fair_tops then fair_started(fair_tops) end
-- Every lease and permit of this call ends at or after now plus the shorter of the two.
if started > 0 then due_at(now + math.min(lease, permit_ttl)) end
if tokens and started < #tokens then next_token = tokens[started + 1] end
if started > 0 and qps > 0 then rate_store(next_token, now, burst, interval) end
flush(now)
out[2] = offline
if blocked then
  out[1] = -2
elseif redis.call('ZCARD', K_QUEUE) == 0 then
  out[1] = idle_hint()
elseif started < n or n == want then
  out[1] = 0
elseif qps > 0 and started >= n and n < free then
  out[1] = math.max(1, math.ceil(next_token - lookahead - now))
else
  out[1] = -1
end
return out
