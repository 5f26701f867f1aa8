-- publish.lua: add jobs to one queue.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: number of jobs n; then 14 fields per job:
--   id, payload, priority, tries, ttl_ms, ttr_ms, delay_ms, run_at_ms (0: use delay),
--   backoff_base_ms, backoff_max_ms, unique_key ('' none), unique_for_ms, attributes (JSON or ''),
--   callback (JSON or '')
-- Returns: flat array of n pairs {id, duplicate (0|1)}; a duplicate names the job already holding
-- the unique key. Jobs due now go to the tail of their priority's ready list (a job with a callback:
-- of the callback lane), others to delayed.
-- The writes of jobs due now are batched: one HSET, one RPUSH per priority.
-- A ready list that was not empty is already in prios, and no consumer that could take a job waits
-- on its queue: a consumer blocks only after it subscribed and then saw every ready list empty (or
-- the queue paused: Resume wakes those), and the push that made the list non-empty since
-- PUBLISHed to it. So only a push into an empty list adds its priority to prios and wakes
-- consumers (push_ready in lib.lua does the same); publishing into a backlog costs neither.
-- Ids are made by the client per publish, so an id already stored means this call is being sent
-- again (a client retry after a lost reply): that job is answered as published and not written
-- twice, so it is never queued twice.
local now = now_ms()
local n = arg_num(ARGV[7])

-- new_record is the record of the job whose fields start at ARGV[a], delayed or due now.
local function new_record(a) return new_job_record(ARGV, a, now) end

-- One job, the call of a lone Publish: HSETNX writes the record and finds a resend in one command,
-- where a batch needs an HMGET before and an HSET after. A job that holds its own unique key was
-- stored by an earlier send of this call: HSETNX answers it.
-- Settling the key's holder may have retried it (an ended lease): flush_notify before any answer.
if n == 1 then
  local id, unique = ARGV[8], ARGV[18]
  if unique ~= '' then
    local holder = unique_holder(unique, now, nil)
    if holder and holder ~= id then
      flush_notify()
      return {holder, 1}
    end
  end
  local rec = new_record(8)
  if redis.call('HSETNX', K_JOBS, id, encode(rec)) == 0 then
    flush_notify()
    return {id, 0}
  end
  if rec[R_STATE] == S_DELAYED then
    push_delayed(id, rec, rec[R_DUE])
  else
    push_ready(id, rec, false)
  end
  if unique ~= '' then redis.call('SET', K_UNIQUE .. unique, id, 'PX', ARGV[19]) end
  count('published', 1)
  flush_notify()
  return {id, 0}
end

local ids = {}
for i = 0, n - 1 do ids[i + 1] = ARGV[8 + i * 14] end
local stored = {}
for i = 1, n, 1000 do
  local got = redis.call('HMGET', K_JOBS, unpack(ids, i, math.min(i + 999, n)))
  for j = 1, #got do stored[i + j - 1] = got[j] end
end
local out = {}
local published = 0
local writes, expiries, first_expiry = {}, {}, nil
local ready_by_pri = {}
local fresh = {} -- jobs of this call, so a unique key held by one of them is seen before the HSET
for i = 0, n - 1 do
  local a = 8 + i * 14
  local id, unique = ARGV[a], ARGV[a + 10]
  local dup = nil
  if stored[i + 1] then
    dup = 'resent'
  elseif unique ~= '' then
    dup = unique_holder(unique, now, fresh)
  end
  if dup == 'resent' then
    out[#out + 1] = id
    out[#out + 1] = 0
  elseif dup then
    out[#out + 1] = dup
    out[#out + 1] = 1
  else
    local rec = new_record(a)
    if rec[R_STATE] == S_DELAYED then
      push_delayed(id, rec, rec[R_DUE])
    elseif has_callback(rec) then
      push_ready(id, rec, false)
    else
      append_to(ready_by_pri, istr(rec[R_PRI]), id)
      if rec[R_EXPIRE] > 0 then
        expiries[#expiries + 1] = ms_str(rec[R_EXPIRE])
        expiries[#expiries + 1] = id
        if not first_expiry or rec[R_EXPIRE] < first_expiry then first_expiry = rec[R_EXPIRE] end
      end
    end
    writes[#writes + 1] = id
    writes[#writes + 1] = encode(rec)
    fresh[id] = rec
    if unique ~= '' then
      redis.call('SET', K_UNIQUE .. unique, id, 'PX', ARGV[a + 11])
    end
    published = published + 1
    out[#out + 1] = id
    out[#out + 1] = 0
  end
end
if #writes > 0 then call_batched('HSET', K_JOBS, writes, 2) end
if push_ready_lists(K_READY, K_PRIOS, ready_by_pri) then notify_ready = true end
if #expiries > 0 then
  call_batched('ZADD', K_EXPIRY, expiries, 2)
  due_at(first_expiry)
end
count('published', published)
flush_notify()
return out
