-- consume.lua: lease up to count ready jobs of one queue, highest priority first, FIFO within one.
-- Housekeeping runs first (expired jobs out, due jobs in, expired leases retried or dead), so a
-- queue that someone reads never waits for the maintenance loop.
-- Acks of the queue's jobs that keep no result can ride along: they are done first, exactly as
-- ack_noresult.lua does them (ack_deliveries), so concurrent acks and consumes of one queue cost
-- Redis one call.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: count; ARGV[8]: ttr_ms (0: each job's own ttr); then two per ack: id, delivery (as
-- ack_noresult.lua's ARGV).
-- Returns: {now_ms, next_wake_ms (-1: none, or count jobs were leased), more (1: stopped early, call
-- again), n, one code per ack (ack_noresult.lua's), job fields...}
-- with 4 fields per job (lease_popped). A paused queue leases nothing (its acks are done).
local now = now_ms()
local want = tonumber(ARGV[7])
local ttr = tonumber(ARGV[8])
local out = {now, 0, 0, 0}
ack_deliveries(out, ARGV, 9, now)
housekeeping(now)
local got, skipped, more = 0, 0, 0
if redis.call('HGET', K_META, 'paused') ~= '1' then
  while got < want do
    local top = redis.call('ZREVRANGE', K_PRIOS, '0', '0')
    if #top == 0 then break end
    local list = K_READY .. top[1]
    local ids = redis.call('LPOP', list, istr(want - got))
    if ids then
      local leased, expired = lease_popped(out, ids, now, ttr)
      got, skipped = got + leased, skipped + expired
    end
    if not ids or redis.call('LLEN', list) == 0 then redis.call('ZREM', K_PRIOS, top[1]) end
    if skipped >= BATCH then
      more = 1
      break
    end
  end
end
count('consumed', got)
flush_notify()
-- Only a caller left short waits, and only a waiter needs the next wake-up time.
if got < want then out[2] = next_wake() else out[2] = -1 end
out[3] = more
out[4] = got
return out
