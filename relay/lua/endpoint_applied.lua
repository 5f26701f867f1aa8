-- endpoint_applied.lua: a Client confirms that it applied an endpoint change (endpoint_set.lua):
-- its cached settings will not be used again. Not an endpoint script: the key is the registry's,
-- under the hash tag {relay}. A confirmation sent twice counts once (a set of Client ids).
-- KEYS[1] applied set of the change's version: Client ids
-- ARGV[1] Client id  [2] how long the set is kept (ms)
-- Returns the number of Clients that confirmed the version so far.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('SCARD', KEYS[1])
