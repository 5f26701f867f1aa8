-- schedule_unindex.lua: remove a schedule from its namespace's index if the index still maps it
-- to the given queue (a library of its own: no lib.lua). A schedule moved to another queue since
-- keeps its entry.
-- KEYS[1] the namespace's hash of schedules (name -> queue).
-- ARGV[1] name, ARGV[2] queue.
-- Returns 1 when the entry was removed, else 0.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
