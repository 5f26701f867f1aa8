-- schedule_settle.lua: after a scheduler visited claimed queues, set when to visit them next
-- (a library of its own: no lib.lua).
-- KEYS[1] the shard's zset, KEYS[2] the shard's hash of generations (schedule_claim.lua).
-- ARGV: per queue: member, the generation read at the claim, the earliest next run of its
-- schedules (ms; -1: the queue has no due schedule left).
-- When nothing lowered the queue's score since the claim (same generation), the score becomes the
-- next run (or the queue leaves the index); otherwise the score only goes down to the next run, so
-- the change that came in between keeps the earlier visit it asked for.
for i = 1, #ARGV, 3 do
  local m, gen, next_run = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local same = (redis.call('HGET', KEYS[2], m) or '') == gen
  if same and next_run == '-1' then
    redis.call('ZREM', KEYS[1], m)
    redis.call('HDEL', KEYS[2], m)
  elseif same then
    redis.call('ZADD', KEYS[1], next_run, m)
  elseif next_run ~= '-1' then
    redis.call('ZADD', KEYS[1], 'LT', next_run, m)
  end
end
return 1
