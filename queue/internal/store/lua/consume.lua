-- consume.lua: lease up to count ready jobs of one queue, highest priority first, FIFO within one.
-- Housekeeping runs first (expired jobs out, due jobs in, expired leases retried or dead), so a
-- queue that someone reads never waits for the maintenance loop.
-- Acks of the queue's jobs that keep no result can ride along: they are done first, exactly as
-- ack_noresult.lua does them (ack_deliveries), so concurrent acks and consumes of one queue cost
-- Redis one call.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: count; ARGV[8]: ttr_ms (0: each job's own ttr); ARGV[9]: max_bytes, the most bytes of
-- records (and ids) one answer carries: the first job is leased whatever its size, so none is
-- stuck, unless max_bytes is negative (-max_bytes then bounds every job: a later queue of a consume
-- whose earlier queues gave jobs already); then
-- two per ack: id, delivery (as ack_noresult.lua's ARGV).
-- Jobs are sized (HSTRLEN) before they are popped, a chunk at a time: a job that does not fit stays
-- at the head of its list, so nothing is leased that the answer does not carry, and one call reads
-- at most max_bytes of records whatever count asks.
-- Returns: {now_ms, next_wake_ms (-1: none, or count jobs were leased), more (1: stopped early, call
-- again; 2: the answer is full, max_bytes reached), n, one code per ack (ack_noresult.lua's), job fields...}
-- with 4 fields per job (lease_popped). A paused queue leases nothing (its acks are done).
local now = now_ms()
local want = tonumber(ARGV[7])
local ttr = tonumber(ARGV[8])
local budget = tonumber(ARGV[9])
local free_first = budget > 0
if not free_first then budget = -budget end
local out = {now, 0, 0, 0}
ack_deliveries(out, ARGV, 10, now)
housekeeping(now)
local got, skipped, more = 0, 0, 0

-- CONSUME_CHUNK is the most ids one step sizes and pops.
local CONSUME_CHUNK = 100

-- fitting_ids returns the first ids (up to n) of list whose records fit in what is left of budget,
-- and whether the budget is spent (a job did not fit). first: nothing was taken yet, so the head
-- job is taken whatever its size.
local function fitting_ids(list, n, first)
  local ids = redis.call('LRANGE', list, '0', istr(n - 1))
  for i, id in ipairs(ids) do
    local size = redis.call('HSTRLEN', K_JOBS, id) + #id
    if size > budget and not (first and free_first and i == 1) then
      local fit = {}
      for j = 1, i - 1 do fit[j] = ids[j] end
      return fit, true
    end
    budget = budget - size
  end
  return ids, false
end
if redis.call('HGET', K_META, 'paused') ~= '1' then
  while got < want do
    local top = redis.call('ZREVRANGE', K_PRIOS, '0', '0')
    if #top == 0 then break end
    local list = K_READY .. top[1]
    local ids, full = fitting_ids(list, math.min(want - got, CONSUME_CHUNK), got + skipped == 0)
    if #ids > 0 then
      redis.call('LPOP', list, istr(#ids))
      local leased, expired = lease_popped(out, ids, now, ttr)
      got, skipped = got + leased, skipped + expired
    end
    if redis.call('LLEN', list) == 0 then redis.call('ZREM', K_PRIOS, top[1]) end
    if full then
      more = 2
      break
    end
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
