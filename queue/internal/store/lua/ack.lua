-- ack.lua: finish deliveries. A job acked with a result is kept (state done, payload dropped) for
-- the result retention; one acked without a result is removed at once. The record is only read for
-- those and for jobs with a unique key (to free it). A batch of acks that all name a delivery and
-- carry no result takes ack_noresult.lua instead, which does the same on fewer keys.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: number of acks n; then 4 fields per ack: id, delivery, has_result (0|1), result.
-- A delivery of 0 finishes the job whatever its state (lmstfy's ack, which names no delivery): a
-- job under a running lease is acked as that delivery, any other job is deleted, except a waiting
-- job past its ttl (it expires) and a done job (its result stays): those are not found.
-- Returns: n codes: 1 acked (or finished), 0 no such job, -1 lease lost (expired, or another
-- delivery holds it).
local now = now_ms()
local n = tonumber(ARGV[7])
local ids = {}
for i = 0, n - 1 do ids[i + 1] = ARGV[8 + i * 4] end
local held, ends = leases_of(ids)
local out = {}
local acked, starts, removed, kept = {}, {}, {}, {}
local seen = {}
for i = 1, n do
  local a = 8 + (i - 1) * 4
  local id = ids[i]
  local d, start
  if held[i] then
    d, start = lease_split(held[i])
    d = tonumber(d)
  end
  local unique = d and d < 0
  if unique then d = -d end
  local want = tonumber(ARGV[a + 1])
  local live = d and ends[i] and tonumber(ends[i]) > now
  if want == 0 and live then want = d end
  if d and not seen[id] and d == want and live then
    seen[id] = true
    acked[#acked + 1] = id
    starts[#acked] = start
    out[i] = 1
    if ARGV[a + 2] == '1' then
      local rec = load(id)
      if unique then release_unique(id, rec) end
      rec[R_STATE] = S_DONE
      rec[R_DELIVERY] = d
      rec[R_LEFT] = rec[R_LEFT] - 1
      rec[R_PAYLOAD] = ''
      rec[R_RESULT] = ARGV[a + 3]
      rec[R_FINISHED] = now
      kept[#kept + 1] = id
      kept[#kept + 1] = encode(rec)
    else
      if unique then release_unique(id, load(id)) end
      removed[#removed + 1] = id
    end
  elseif seen[id] then
    -- Finished earlier in this call (a combined batch naming the job twice): gone, as it would
    -- be for a call that came after.
    out[i] = 0
  elseif want == 0 then
    -- Finish a job that is not under a running lease: delete it. A waiting job past its ttl is
    -- already gone to users (Get says so), and a done job keeps its result: both are not found.
    seen[id] = true
    local rec = load(id)
    local waiting = rec and (rec[R_STATE] == S_READY or rec[R_STATE] == S_DELAYED) and not d
    if rec and waiting and rec[R_EXPIRE] > 0 and rec[R_EXPIRE] <= now then
      expire(id, rec)
      out[i] = 0
    elseif rec and rec[R_STATE] ~= S_DONE then
      forget(id, rec) -- unlink also drops a lease that ended and was not reaped yet
      count('deleted', 1)
      out[i] = 1
    else
      out[i] = 0
    end
  else
    out[i] = not_acked(id)
  end
end
end_acked_leases(acked, starts, now)
if #removed > 0 then call_batched('HDEL', K_JOBS, removed, 1) end
if #kept > 0 then
  call_batched('HSET', K_JOBS, kept, 2)
  local scores = {}
  for i = 1, #kept, 2 do
    scores[#scores + 1] = ms_str(now)
    scores[#scores + 1] = kept[i]
  end
  call_batched('ZADD', K_DONE, scores, 2)
  due_after(now, RESULT_RETENTION)
  trim(K_DONE, now, RESULT_RETENTION, RESULT_MAX, nil)
end
return out
