-- schedule_put.lua: create or replace one schedule of a queue (a library of its own: no lib.lua).
-- KEYS[1] the schedule's hash, KEYS[2] the queue's due zset of schedules (name -> next run, ms),
-- KEYS[3] the queue's set of schedule names. All carry the queue's hash tag.
-- ARGV[1] name, ARGV[2] definition (JSON, read only by Go), ARGV[3] next run (ms; -1: none),
-- ARGV[4] paused (0|1).
-- Returns the schedule's new version. The counters (fires, missed) and the last run of a schedule
-- that existed are kept; its next run is replaced. A resend only bumps the version once more, which
-- invalidates nothing a scheduler could still apply (it re-reads before it fires).
local k, due, all = KEYS[1], KEYS[2], KEYS[3]
local name, next_run, paused = ARGV[1], ARGV[3], ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local version = redis.call('HINCRBY', k, 'version', 1)
if redis.call('HSETNX', k, 'created_at', now) == 1 then
  redis.call('HSET', k, 'missed', '0', 'fires', '0')
end
redis.call('HSET', k, 'spec', ARGV[2], 'paused', paused, 'next_run', next_run, 'updated_at', now)
redis.call('SADD', all, name)
if paused == '0' and next_run ~= '-1' then
  redis.call('ZADD', due, next_run, name)
else
  redis.call('ZREM', due, name)
end
return version
