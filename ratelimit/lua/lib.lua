-- lib.lua: helpers shared by the rate limit scripts. Not a script itself: scripts.go builds a Redis
-- function library from it and the scripts (Redis 7+: the helpers are created once, when the
-- library loads), and, for stores without FUNCTION, EVAL scripts that start with it.

-- now_us is the script's "now" in microseconds: given (the optional ARGV tests pass) when set,
-- else Redis TIME.
local function now_us(given)
  local now = tonumber(given)
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return now
end

-- fdiv is floor(a / b) for integers a, b (b > 0) exact up to 2^53: the float division is corrected
-- by one step either way.
local function fdiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

-- expire_with_last_lease sets a semaphore's TTL (a sorted set of lease ids scored by their expiry
-- in microseconds) to when its last lease expires, so leases whose holders died clean themselves up.
local function expire_with_last_lease(key, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', key, math.ceil((tonumber(last[2]) - now) / 1000))
end

