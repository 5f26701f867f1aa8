-- configure.lua: replace a room's settings (creating the room) and bump its version, so every
-- process's cached copy is refreshed at its next call. The admission scripts read max_active and
-- the timeouts from the hash itself, so a change takes effect at the next admission everywhere.
-- The write is conditional when ARGV[1] names a version: a caller that read the settings, changed
-- some of them and writes them back (PATCH, a config file's changes) overwrites nobody's change
-- made in between; it reads again and retries instead. Sent twice, the second call finds the
-- version moved and writes nothing.
-- KEYS: the room keys (lib.lua).
-- ARGV[1]: the version the caller read (0: the room must not exist yet), or -1 to write whatever
--          is there.
-- ARGV[2]: "" to keep the room's applied record (the settings a config file last applied, kept
--          across every write), or "=" followed by the new record.
-- ARGV[3..]: field, value pairs (config.go writes every field).
-- A room holding visitors becomes due now in the due index (due_at): its timeouts may have
-- shortened, and maintain.lua sets its entry from the new ones.
-- Returns the new version, or 0 when ARGV[1] named a version that is no longer the room's.
local version = tonumber(redis.call('HGET', K_CONFIG, 'version') or '0')
local expect = tonumber(ARGV[1])
if expect >= 0 and expect ~= version then
  return 0
end
local applied = redis.call('HGET', K_CONFIG, 'applied')
if ARGV[2] ~= '' then
  applied = string.sub(ARGV[2], 2)
end
version = version + 1
redis.call('DEL', K_CONFIG)
redis.call('HSET', K_CONFIG, 'version', version, unpack(ARGV, 3))
if applied and applied ~= '' then
  redis.call('HSET', K_CONFIG, 'applied', applied)
end
if redis.call('EXISTS', K_ACTIVE, K_SEEN) > 0 then due_at(now_ms()) end
return version
