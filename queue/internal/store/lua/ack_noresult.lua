-- ack_noresult.lua: finish deliveries whose jobs keep no result: each acked job is removed at once.
-- This is what ack.lua does for an ack that carries no result (an Ack without Result: how workers
-- and HTTP clients finish most jobs; or lmstfy's ack of a job under a running lease), on the five
-- keys that needs instead of the queue's twelve, and with two arguments per ack instead of four:
-- Redis charges about 1,900 instructions for every argument of a call before the script starts.
-- The client sends a batch here only when no ack in it carries a result (runAck in lease.go).
-- Runs only as a library function, without lib.lua's bind: bind_ack points the helpers it uses
-- (ack_deliveries and what it calls) at these keys.
-- KEYS[1] jobs, KEYS[2] lease, KEYS[3] leased, KEYS[4] stats, KEYS[5] unique (the queue keys of
--   lib.lua).
-- ARGV: two per ack: id, delivery (> 0, or 0 to finish the job whatever its delivery: lmstfy's ack).
-- Returns: one code per ack (ack_deliveries in lib.lua): 1 acked, 0 no such job, -1 lease lost,
-- 2 left to ack.lua.
bind_ack(KEYS)
local out = {}
ack_deliveries(out, ARGV, 1, now_ms())
return out
