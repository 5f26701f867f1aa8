-- purge.lua: remove every job of the queue, in every state. Counters stay (they are monotonic);
-- with drop = 1 the queue's counters and settings go too (the queue is deleted).
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: drop (0|1).
-- Returns: the number of jobs removed.
local n = redis.call('HLEN', K_JOBS)
for _, p in ipairs(redis.call('ZRANGE', K_PRIOS, 0, -1)) do
  redis.call('UNLINK', K_READY .. p)
end
redis.call('UNLINK', K_JOBS, K_PRIOS, K_DELAYED, K_LEASED, K_LEASE, K_EXPIRY, K_DEAD, K_DONE,
  callbacks_key())
if ARGV[7] == '1' then
  redis.call('UNLINK', K_STATS, K_META)
else
  count('purged', n)
end
return n
