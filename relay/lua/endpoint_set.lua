-- endpoint_set.lua: create, replace or delete an endpoint's settings. Not an endpoint script: its
-- keys are the registry's, all under the hash tag {relay}.
-- KEYS[1] settings hash  name -> json
-- KEYS[2] version  string bumped on every change (instances poll it to refresh their cache)
-- KEYS[3] known    zset   name -> last change (ms): endpoints that may still hold tasks, for
--                         the maintenance of deleted ones
-- ARGV[1] name  [2] json ('' deletes)
-- Returns 1 when the endpoint existed before, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local existed = redis.call('HEXISTS', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  if existed == 0 then return 0 end
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('INCR', KEYS[2])
return existed
