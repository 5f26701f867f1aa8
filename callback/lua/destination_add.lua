-- destination_add.lua: allow callbacks of a namespace to go to URLs under a prefix,
-- keeping the set within its bound.
-- KEYS[1]: the namespace's allowed prefixes (set).
-- ARGV[1]: the prefix; ARGV[2]: the most prefixes a namespace may have.
-- Returns: 1 added, 0 already there; error reply 'TOO_MANY' when the set is full.
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return redis.error_reply('TOO_MANY')
end
return redis.call('SADD', KEYS[1], ARGV[1])
