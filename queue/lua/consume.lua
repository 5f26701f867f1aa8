-- consume.lua: lease up to count ready jobs of one queue, highest priority first, FIFO within one.
-- Housekeeping runs first (expired jobs out, due jobs in, expired leases retried or dead), so a
-- queue that someone reads never waits for the maintenance loop.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: count; ARGV[8]: ttr_ms (0: each job's own ttr).
-- Returns: {now_ms, next_wake_ms (-1: none), more (1: stopped early, call again), n, job fields...}
-- with 21 fields per job (reply_job). A paused queue leases nothing.
local now = now_ms()
local want = tonumber(ARGV[7])
local ttr = tonumber(ARGV[8])
housekeeping(now)
local out = {}
local got, skipped, more = 0, 0, 0
if redis.call('HGET', K_META, 'paused') ~= '1' then
  while got < want do
    local top = redis.call('ZREVRANGE', K_PRIOS, 0, 0)
    if #top == 0 then break end
    local list = K_READY .. top[1]
    local ids = redis.call('LPOP', list, want - got)
    if not ids then
      redis.call('ZREM', K_PRIOS, top[1])
    else
      for _, id in ipairs(ids) do
        local rec = load(id)
        if rec and rec[R_EXPIRE] > 0 and rec[R_EXPIRE] <= now then
          expire(id, rec)
          skipped = skipped + 1
        elseif rec then
          local lease = ttr
          if lease <= 0 then lease = rec[R_TTR] end
          rec[R_STATE] = S_LEASED
          rec[R_DELIVERY] = rec[R_DELIVERY] + 1
          rec[R_LEFT] = rec[R_LEFT] - 1
          rec[R_LEASE] = now + lease
          save(id, rec)
          redis.call('ZADD', K_LEASED, now + lease, id)
          if rec[R_EXPIRE] > 0 then redis.call('ZREM', K_EXPIRY, id) end
          reply_job(out, id, rec, -1)
          got = got + 1
        end
      end
      if redis.call('LLEN', list) == 0 then redis.call('ZREM', K_PRIOS, top[1]) end
    end
    if skipped >= BATCH then
      more = 1
      break
    end
  end
end
count('consumed', got)
flush_notify()
local head = {now, next_wake(), more, got}
for i = 1, #out do head[#head + 1] = out[i] end
return head
