-- endpoint_set.lua: create, replace or delete an endpoint's settings, and tell every Client. Not
-- an endpoint script: its keys are the registry's, all under the hash tag {relay}.
-- KEYS[1] settings hash  name -> json
-- KEYS[2] version  string bumped on every change (instances poll it to refresh their cache)
-- KEYS[3] known    zset   name -> last change (ms): endpoints that may still hold tasks, for
--                         the maintenance of deleted ones
-- KEYS[4] deleted  zset   name -> when to visit (ms): deleted endpoints maintenance has not
--                         forgotten yet (endpoint_forget.lua)
-- ARGV[1] name  [2] json ('' deletes)  [3] settings channel
-- Returns {existed, version, told}: existed 1 when the endpoint existed before, else 0; version
-- the registry's version after the change; told the Clients subscribed to the settings channel
-- (PUBLISH's count), which each confirm the version with endpoint_applied.lua. Deleting an
-- endpoint that does not exist changes nothing and tells no one: {0, version, 0}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local existed = redis.call('HEXISTS', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  if existed == 0 then return {0, tonumber(redis.call('GET', KEYS[2]) or '0'), 0} end
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[4], now, ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('ZREM', KEYS[4], ARGV[1])
end
redis.call('ZADD', KEYS[3], now, ARGV[1])
local version = redis.call('INCR', KEYS[2])
local told = redis.call('PUBLISH', ARGV[3], version)
return {existed, version, told}
