-- ack_noresult.lua: finish deliveries whose jobs keep no result: each acked job is removed at once.
-- This is what ack.lua does for an ack that carries no result (an Ack without Result: how workers
-- and HTTP clients finish most jobs; or lmstfy's ack of a job under a running lease), on the five
-- keys that needs instead of the queue's twelve, and with two arguments per ack instead of four:
-- Redis charges about 1,900 instructions for every argument of a call before the script starts.
-- The client sends a batch here only when no ack in it carries a result (runAck in lease.go).
-- Runs only as a library function, without lib.lua's bind: bind_ack points the helpers it uses
-- (leases_of, load, release_unique, not_acked, end_acked_leases) at these keys.
-- KEYS[1] jobs, KEYS[2] lease, KEYS[3] leased, KEYS[4] stats, KEYS[5] unique (the queue keys of
--   lib.lua).
-- ARGV: two per ack: id, delivery (> 0, or 0 to finish the job whatever its delivery: lmstfy's ack).
-- Returns: one code per ack, as ack.lua: 1 acked, 0 no such job, -1 lease lost (expired, or another
-- delivery holds it); and 2 for an ack left to ack.lua: a finish (delivery 0) of a job under no
-- running lease, which deletes the job wherever it waits (keys this script does not take). Later
-- acks of that job in the batch get 0, as ack.lua answers them once it has deleted the job.
bind_ack(KEYS)
local now = now_ms()
local n = #ARGV / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[i * 2 - 1] end
local held, ends = leases_of(ids)
local out, acked, seen = {}, {}, {}
for i = 1, n do
  local id = ids[i]
  -- The lease hash holds the delivery as lease_popped wrote it (istr, negated for a job with a
  -- unique key) and the client sends it in the same decimal form, so the two compare as strings:
  -- converting both to numbers cost Redis more than the rest of the check.
  local held_by, want = held[i], ARGV[i * 2]
  local mine, unique = false, false
  if held_by then
    unique = string.byte(held_by) == 45 -- '-'
    mine = want == '0' or held_by == want or (unique and held_by == '-' .. want)
  end
  local live = mine and ends[i] and tonumber(ends[i]) > now
  if live and not seen[id] then
    seen[id] = true
    acked[#acked + 1] = id
    out[i] = 1
    if unique then release_unique(id, load(id)) end
  elseif seen[id] then
    -- Acked or left to ack.lua earlier in this call (a combined batch naming the job twice):
    -- gone, as it would be for a call that came after.
    out[i] = 0
  elseif want == '0' then
    seen[id] = true
    out[i] = 2
  else
    out[i] = not_acked(id)
  end
end
end_acked_leases(acked)
if #acked > 0 then call_batched('HDEL', K_JOBS, acked, 1) end
return out
