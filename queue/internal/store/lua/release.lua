-- release.lua: give a leased job back unprocessed (a worker shutting down). It goes to the head of
-- its ready list with the try it used returned, so another consumer gets it at once and no failed
-- try is counted. The delivery number is kept, so the released delivery can no longer be named.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: id; ARGV[8]: delivery.
-- Returns: 1; error replies 'NOT_FOUND' or 'LEASE_LOST'.
local now = now_ms()
local id = ARGV[7]
local delivery = tonumber(ARGV[8])
local rec, why = take_lease(id, delivery, now)
if not rec then return redis.error_reply(string.upper(why)) end
rec[R_DELIVERY] = delivery
push_ready(id, rec, true)
save(id, rec)
count('released', 1)
flush_notify()
return 1
