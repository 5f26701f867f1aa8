-- lib.lua: helpers shared by the cache scripts. Not a script itself: scripts.go builds a Redis
-- function library from it and the scripts (Redis 7+: the helpers are created once, when the
-- library loads), and, for stores without FUNCTION, EVAL scripts that start with it.
-- Record format: <state>|<refresh_at>|<lock_until>|<owner>|<payload> (see record.go).

-- now_ms is Redis's time in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- store writes a value or not-found marker (state 'v' or 'n') with no lock: it expires in ttl ms,
-- and a reader starts a background reload after ms from now (refresh-ahead; 0: never). It wakes
-- the waiters on channel.
local function store(key, state, payload, ttl, after, now, channel)
  local refresh = '0'
  if after > 0 then
    refresh = string.format('%d', now + after)
  end
  redis.call('SET', key, state .. '|' .. refresh .. '|0||' .. payload, 'PX', ttl)
  redis.call('PUBLISH', channel, '')
end

