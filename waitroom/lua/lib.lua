-- lib.lua: helpers shared by every waitroom script. Not a script itself: scripts.go builds a Redis
-- function library from it and the scripts (Redis 7+: the helpers are created once, when the
-- library loads), and, for stores without FUNCTION, EVAL scripts that start with it. Either way a
-- script's first step is bind(KEYS), which points the helpers at the call's room.
--
-- Every waitroom script receives the same KEYS, all of one room and all sharing its hash tag:
--   KEYS[1]  config   hash   the room's settings (config.go: max_active, new_users_per_minute,
--                            session_timeout, queue_timeout, pass_ttl, open_at (Unix ms, 0 none),
--                            upstream, template, language, fail_open) and its version
--   KEYS[2]  active   zset   visitor -> last touch (ms); the admitted visitors holding a slot
--   KEYS[3]  line     zset   visitor -> ticket; the waiting visitors, lowest ticket first.
--                            Arrivals before open_at get a random ticket below 2^52 (the shuffle),
--                            later ones 2^52 + a sequence number (FIFO behind them)
--   KEYS[4]  seen     zset   visitor -> last heartbeat (ms), for the waiting visitors
--   KEYS[5]  since    hash   visitor -> arrival time (ms), for the waiting visitors
--   KEYS[6]  stats    hash   seq (tickets handed out), tat (the inflow limit's GCRA state, ms),
--                            firsta and firstw (first admission, first admission from the line,
--                            ms), admitted, abandoned, released, expired
--   KEYS[7]  minutes  hash   per Unix minute m, the last few minutes only: a<m> admissions, w<m>
--                            admissions of visitors who had waited in line (the line's pace, which
--                            the ETA uses: a room filling its free slots is not a line moving),
--                            x<m> abandonments
--   KEYS[8]  waits    list   the waits (ms) of the latest admissions, newest first, at most 101
--   KEYS[9]  due      zset   the shard of the due index in the room's slot (keys.go dueBase):
--                            member the room's name, score at or before the time its next
--                            visitor goes idle or silent (due_at); maintain.lua sets it
--   KEYS[10] released zset   visitor -> release time (ms): admitted visitors released lately.
--                            Their passes are refused for session_timeout and a minute (longer
--                            than any pass lives; touch.lua), and their arrivals answered "left"
--                            for the left window (arrive.lua); an admission clears the mark.
--                            release.lua trims it and it expires with its latest mark
-- RELEASED_REFUSED_MS is how much longer than session_timeout a released visitor's passes are
-- refused: more than any pass outlives its last renewal.
-- Script-specific arguments are in ARGV.

-- The keys of the current call's room, set by bind.
local K_CONFIG, K_ACTIVE, K_LINE, K_SEEN, K_SINCE, K_STATS, K_MINUTES, K_WAITS, K_DUE, K_RELEASED

local function bind(keys)
  K_CONFIG, K_ACTIVE, K_LINE, K_SEEN = keys[1], keys[2], keys[3], keys[4]
  K_SINCE, K_STATS, K_MINUTES, K_WAITS, K_DUE = keys[5], keys[6], keys[7], keys[8], keys[9]
  K_RELEASED = keys[10]
end

local RELEASED_REFUSED_MS = 60000

-- room_name is the room's name, read off its config key ("...:{<room>}:config").
local function room_name() return string.match(K_CONFIG, '{([^{}]*)}:config$') end

-- due_at records in the due index that the room has work at t (ms): a visitor goes idle or
-- silent. The entry only moves earlier (LT; added when missing), so it stays at or before the
-- room's next due time whatever the order of calls; maintain.lua sets it to that time, so a
-- maintenance pass visits only rooms with something due.
local function due_at(t)
  redis.call('ZADD', K_DUE, 'LT', string.format('%d', t), room_name())
end

-- How many minutes of admissions the ETA looks back at, and how many minute fields are kept.
local RATE_MINUTES = 5
local KEEP_MINUTES = 10

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- call_each runs cmd on key with every member of list, in chunks: unpack() of 8,000 or more
-- values overflows Lua's stack, and a script that fails after its first writes leaves them done
-- (Config.Batch, which bounds the lists, may be set that high).
local function call_each(cmd, key, list)
  for i = 1, #list, 1000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
  end
end

-- read_config returns the settings the scripts decide with, or nil when the room does not exist.
local function read_config()
  local c = redis.call('HMGET', K_CONFIG, 'max_active', 'new_users_per_minute', 'session_timeout',
    'queue_timeout', 'open_at', 'version')
  if not c[1] then return nil end
  return {
    max_active = tonumber(c[1]),
    per_minute = tonumber(c[2]) or 0,
    session_timeout = tonumber(c[3]),
    queue_timeout = tonumber(c[4]),
    open_at = tonumber(c[5]) or 0,
    version = tonumber(c[6]) or 0,
  }
end

-- free_idle removes up to batch admitted visitors not touched for session_timeout and returns how
-- many it removed.
local function free_idle(cfg, now, batch)
  local idle = redis.call('ZRANGEBYSCORE', K_ACTIVE, '-inf', now - cfg.session_timeout, 'LIMIT', 0, batch)
  if #idle > 0 then
    call_each('ZREM', K_ACTIVE, idle)
    redis.call('HINCRBY', K_STATS, 'expired', #idle)
  end
  return #idle
end

-- trim_minutes drops the per-minute counters older than KEEP_MINUTES once there are enough of
-- them to bother (HLEN is O(1); the hash never holds more than about 3 * KEEP_MINUTES fields: three kinds).
local function trim_minutes(now)
  if redis.call('HLEN', K_MINUTES) <= 3 * KEEP_MINUTES then return end
  local oldest = math.floor(now / 60000) - KEEP_MINUTES
  local fields = redis.call('HKEYS', K_MINUTES)
  local old = {}
  for _, f in ipairs(fields) do
    if tonumber(string.sub(f, 2)) < oldest then old[#old + 1] = f end
  end
  if #old > 0 then redis.call('HDEL', K_MINUTES, unpack(old)) end
end

-- recent returns the events of kind ('a' admitted, 'w' admitted from the line, 'x' abandoned) in
-- the last RATE_MINUTES minutes and the length (ms) of the stretch they were counted over: from
-- the start of the oldest minute counted, or from the first admission of that kind ('x' uses the
-- first admission) when that is later.
local function recent(kind, now)
  local minute = math.floor(now / 60000)
  local fields = {}
  for m = minute - RATE_MINUTES, minute do fields[#fields + 1] = kind .. m end
  local counts = redis.call('HMGET', K_MINUTES, unpack(fields))
  local sum = 0
  for _, c in ipairs(counts) do sum = sum + (tonumber(c) or 0) end
  local start = (minute - RATE_MINUTES) * 60000
  local first = tonumber(redis.call('HGET', K_STATS, kind == 'w' and 'firstw' or 'firsta') or '0')
  if first > start then start = first end
  return sum, now - start
end
