-- fail.lua: count a failed authentication of one client (an IPv4 address or an IPv6 /64) and say
-- how long the client must wait before its credentials are checked again.
--
-- The first ARGV[2] failures within ARGV[3] ms of the first one are free. Each further failure
-- makes the client wait ARGV[4] ms doubled per failure over the allowance, at most ARGV[5] ms.
-- While a client waits its failures are not counted (the server refuses it before checking its
-- credential; one that raced the wait on another instance is answered with the wait left). The
-- record outlives a wait by a window, so a failure soon after a wait doubles it, and a quiet
-- window forgets the client: the key always expires.
--
-- KEYS[1]  the client's record: hash of n (failures counted), until (ms the wait ends), call
--          (id of the last counted call)
-- ARGV[1]  call id: a call sent twice answers as the first did and counts once
-- ARGV[2]  free failures per window
-- ARGV[3]  window in ms
-- ARGV[4]  first wait in ms
-- ARGV[5]  longest wait in ms
-- Returns: {failures counted, wait in ms (0: none)}
local rec = redis.call('HMGET', KEYS[1], 'n', 'until', 'call')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(rec[1]) or 0
local wait_until = tonumber(rec[2]) or 0
if rec[3] == ARGV[1] or wait_until > now then
  return {n, math.max(0, wait_until - now)}
end
n = n + 1
local free, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local wait = 0
if n > free then
  wait = math.min(tonumber(ARGV[4]) * 2 ^ math.min(n - free - 1, 40), tonumber(ARGV[5]))
  wait = math.floor(wait)
  redis.call('HSET', KEYS[1], 'n', n, 'until', now + wait, 'call', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], wait + window)
else
  redis.call('HSET', KEYS[1], 'n', n, 'call', ARGV[1])
  if n == 1 then
    redis.call('PEXPIRE', KEYS[1], window)
  end
end
return {n, wait}
