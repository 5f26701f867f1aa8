-- configure.lua: replace a room's settings (creating the room) and bump its version, so every
-- process's cached copy is refreshed at its next call. The admission scripts read max_active and
-- the timeouts from the hash itself, so a change takes effect at the next admission everywhere.
-- KEYS: the room keys (lib.lua).
-- ARGV: field, value pairs (config.go writes every field).
-- Returns the new version.
local version = tonumber(redis.call('HGET', K_CONFIG, 'version') or '0') + 1
redis.call('DEL', K_CONFIG)
redis.call('HSET', K_CONFIG, 'version', version, unpack(ARGV))
return version
