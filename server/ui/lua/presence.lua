-- presence.lua: one server's heartbeat (its description under its own key, for ttl) and its
-- entry in the index of servers, or its leaving (value ""). The index drops the servers whose
-- heartbeat expired and keeps at most ARGV[4] (those expiring last), so it stays bounded whatever
-- crashed. Sending it twice writes the same.
--
-- KEYS[1]  the index of servers (sorted set: member the server's id, score its expiry in ms)
-- KEYS[2]  the server's description (a string, JSON)
-- ARGV[1]  the server's id
-- ARGV[2]  its description, or "" when it leaves
-- ARGV[3]  the heartbeat's ttl in ms
-- ARGV[4]  the most servers the index keeps
-- Returns: how many servers the index holds.
if ARGV[2] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
  return redis.call('ZCARD', KEYS[1])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
local most = tonumber(ARGV[4])
if n > most then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - most - 1)
  n = most
end
redis.call('PEXPIRE', KEYS[1], ttl)
return n
