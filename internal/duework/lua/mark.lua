-- mark.lua: marks a sweep of a registry complete for a while (Sweep): the mark key holds '1' and
-- lapses after its lifetime, when the registry is swept again. Flagged allow-oom: the pass that
-- completes a sweep is maintenance, which must run on a Redis over maxmemory so it can drain.
-- Sent twice it sets the same mark twice.
-- KEYS[1] the mark  ARGV[1] its lifetime (ms)
-- Returns 1.
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 1
