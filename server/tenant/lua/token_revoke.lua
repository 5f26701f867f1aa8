-- token_revoke.lua: delete tokens' records and their entries in their namespace's token index.
-- Safe to run twice: what is gone stays gone.
--
-- KEYS[1]  the token hash (token id -> record JSON)
-- KEYS[2]  the namespace's token index
-- ARGV     pairs: token id, index member
-- Returns: how many records were deleted.
local n = 0
for i = 1, #ARGV, 2 do
  n = n + redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i + 1])
end
return n
