-- token_create.lua: store a new token's record and add it to its namespace's token index, unless
-- its id is taken or the namespace holds its quota of tokens already. A repeat of a call that
-- created the token (the same record, to the millisecond) answers as the first did.
--
-- KEYS[1]  the token hash (token id -> record JSON)
-- KEYS[2]  the namespace's token index (sorted set, score 0, member "<created ms>:<id>")
-- ARGV[1]  the token id
-- ARGV[2]  the record JSON
-- ARGV[3]  the index member
-- ARGV[4]  the namespace's most tokens (0: no quota)
-- Returns: 1 created, 0 the id is taken (by this secret or another), -1 the quota is reached.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  if old == ARGV[2] then
    return 1
  end
  return 0
end
local quota = tonumber(ARGV[4])
if quota > 0 and redis.call('ZCARD', KEYS[2]) >= quota then
  return -1
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[3])
return 1
