-- arrive.lua: a visitor arrives or polls. One call decides everything, so a slot is never sold
-- twice: it frees idle slots (a bounded batch), keeps an admitted visitor's slot alive, puts a new
-- visitor in line (a random ticket before open_at, the next FIFO ticket after), records the
-- heartbeat, and admits the visitor when it is within the free slots from the head of the line and
-- the inflow limit (new_users_per_minute, GCRA) allows one more. Only live visitors ahead count
-- (polled within the grace): a silent visitor keeps its place number but a free slot does not
-- wait for it; it is dropped at queue_timeout (maintain.lua), or admitted when it polls again.
-- A status poll is held to its visitor's poll limit first (GCRA: polls_per_minute, bursts of a
-- third of it), so a poll costs one call; a refused poll changes nothing else.
-- A visitor new to the line passes a gate first (entry.go): the room's proof-of-work challenge
-- when the line is challenge_above long or longer (a proof is used once), and the arrival limit of
-- its client address (GCRA: arrivals_per_minute, bursts of as many). A refused visitor changes
-- nothing but what refused it.
-- KEYS: the room keys (lib.lua), then
--   KEYS[11] proofs  zset    used challenge id -> its expiry (ms); expires with the newest
--   KEYS[12] addr    string  the client address's limit state (the GCRA's tat, ms); expires
--   KEYS[13] poll    string  the visitor's poll limit state: "<tat ms> <call id of the poll it
--                    last charged>"; expires once the visitor may poll a full burst again
-- ARGV[1] visitor id
-- ARGV[2] the visitor's shuffle ticket if it arrives before open_at (integer in [0, 2^52))
-- ARGV[3] batch: the most idle slots freed by this call, and the most visitors ahead looked at
--         to find the live ones (any beyond count as live)
-- ARGV[4] grace (ms): a waiting visitor whose last poll is older is silent (skipped)
-- ARGV[5] arrivals per minute per address when the room sets none (arrivals_per_minute 0);
--         negative: no limit
-- ARGV[6] 1 when KEYS[12] is a client address's key, 0 when there is no address (no limit)
-- ARGV[7] the id of the challenge the visitor proved, '' for none
-- ARGV[8] that challenge's expiry (Unix ms)
-- ARGV[9] polls per minute per visitor; 0: no poll limit (a library caller's Arrive)
-- ARGV[10] the poll limit's burst (polls allowed at once)
-- ARGV[11] the call id: a poll sent again (a lost reply) finds its own id in KEYS[13] and is
--          not charged twice; the rest of the script is idempotent by the visitor
-- ARGV[12] the left window (ms): how long after its release a visitor's arrivals answer "left"
-- Returns {state, position, length, active, max_active, version, opens_in_ms, waited_ms,
--          recent_admitted, recent_window_ms}
--   state 1 admitted (now or before), 2 waiting, 3 waiting for open_at, 0 no such room,
--   4 kept out by the address's limit (opens_in_ms then says when it may add one), 5 the line
--   wants a proof of work this visitor did not bring (or brought used), 6 the poll was refused
--   by the visitor's poll limit (opens_in_ms says when it may poll again; nothing else is read),
--   7 the visitor was released within the left window (it has left; nothing is written)
--   position is 1-based (0 unless waiting); length the number in line; recent_* the admissions
--   from the line of the last minutes and the stretch they cover (lib.lua: recent), for the ETA.
local cfg = read_config()
if not cfg then return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0} end
local now = now_ms()
local v = ARGV[1]

local poll_rate = tonumber(ARGV[9])
if poll_rate > 0 then
  local interval = 60000 / poll_rate
  local tat, charged = now, ''
  local raw = redis.call('GET', KEYS[13])
  if raw then
    local sp = string.find(raw, ' ', 1, true)
    if sp then
      tat = math.max(tonumber(string.sub(raw, 1, sp - 1)) or now, now)
      charged = string.sub(raw, sp + 1)
    end
  end
  if charged ~= ARGV[11] then
    local next_tat = tat + interval
    local over = next_tat - now - interval * tonumber(ARGV[10])
    if over > 0 then return {6, 0, 0, 0, 0, cfg.version, math.ceil(over), 0, 0, 0} end
    redis.call('SET', KEYS[13], string.format('%.17g', next_tat) .. ' ' .. ARGV[11],
      'PX', math.ceil(next_tat - now))
  end
end

free_idle(cfg, now, tonumber(ARGV[3]))

local function reply(state, position, opens_in, waited)
  local admitted, window = recent('w', now)
  return {state, position, redis.call('ZCARD', K_LINE), redis.call('ZCARD', K_ACTIVE), cfg.max_active,
    cfg.version, opens_in, waited, admitted, window}
end

if redis.call('ZSCORE', K_ACTIVE, v) then
  redis.call('ZADD', K_ACTIVE, now, v)
  return reply(1, 0, 0, 0)
end

-- A visitor released within the left window has left: it does not queue again yet, whatever
-- cookies its client kept (release.lua).
local released = redis.call('ZSCORE', K_RELEASED, v)
if released and tonumber(released) + tonumber(ARGV[12]) > now then return reply(7, 0, 0, 0) end

-- gate returns nil when a new visitor may join the line (its proof and its address's arrival
-- are then recorded), else the reply that keeps it out.
local function gate()
  local g = redis.call('HMGET', K_CONFIG, 'challenge_above', 'arrivals_per_minute')
  local above, rate = tonumber(g[1]) or 0, tonumber(g[2]) or 0
  local proof = ARGV[7]
  if above > 0 and redis.call('ZCARD', K_LINE) >= above then
    if proof == '' then return reply(5, 0, 0, 0) end
    redis.call('ZREMRANGEBYSCORE', KEYS[11], '-inf', now)
    if redis.call('ZSCORE', KEYS[11], proof) then return reply(5, 0, 0, 0) end
  else
    proof = ''
  end
  if rate == 0 then rate = tonumber(ARGV[5]) end
  if rate > 0 and ARGV[6] == '1' then
    local interval = math.floor(60000 / rate)
    local tat = math.max(tonumber(redis.call('GET', KEYS[12]) or '0'), now)
    if tat + interval - now > interval * rate then
      return reply(4, 0, tat + interval - now - interval * rate, 0)
    end
    redis.call('SET', KEYS[12], tat + interval, 'PX', tat + interval - now)
  end
  if proof ~= '' then
    local expires = tonumber(ARGV[8])
    redis.call('ZADD', KEYS[11], expires, proof)
    if redis.call('PTTL', KEYS[11]) < expires - now then redis.call('PEXPIRE', KEYS[11], expires - now) end
  end
  return nil
end

local early = cfg.open_at > now
local waited_before = redis.call('ZSCORE', K_LINE, v)
if not waited_before then
  local refused = gate()
  if refused then return refused end
  local ticket
  if early then
    ticket = tonumber(ARGV[2])
  else
    ticket = 4503599627370496 + redis.call('HINCRBY', K_STATS, 'seq', 1) -- 2^52 + seq
  end
  redis.call('ZADD', K_LINE, ticket, v)
  redis.call('HSET', K_SINCE, v, now)
end
redis.call('ZADD', K_SEEN, now, v)
due_at(now + cfg.queue_timeout)
local since = tonumber(redis.call('HGET', K_SINCE, v) or now)
if early then
  return reply(3, 0, cfg.open_at - now, now - since)
end

-- live_ahead counts the live visitors among the first rank of the line, up to limit (enough to
-- decide) and looking at no more than batch of them; the ones beyond batch count as live.
local function live_ahead(rank, limit, batch, live_since)
  local count = math.max(0, rank - batch)
  local scan = math.min(rank, batch)
  local i = 0
  while i < scan and count < limit do
    local ids = redis.call('ZRANGE', K_LINE, i, math.min(i + 100, scan) - 1)
    local seen = redis.call('ZMSCORE', K_SEEN, unpack(ids))
    for j = 1, #ids do
      if seen[j] and tonumber(seen[j]) >= live_since then count = count + 1 end
    end
    i = i + #ids
  end
  return count
end

local rank = redis.call('ZRANK', K_LINE, v)
local free = cfg.max_active - redis.call('ZCARD', K_ACTIVE)
local ahead = rank
if free > 0 and rank > 0 then
  local limit = free
  if cfg.per_minute > 0 then limit = math.max(free, math.floor(cfg.per_minute / 12) + 1) end
  ahead = live_ahead(rank, limit, tonumber(ARGV[3]), now - tonumber(ARGV[4]))
end
if ahead < free then
  local allowed = true
  if cfg.per_minute > 0 then
    -- GCRA: one admission every 60000/per_minute ms, bursts of up to per_minute/12 (5 seconds'
    -- worth, at least 1) after a quiet spell. Like the slots, the admissions the limit allows now
    -- go to the head of the line: the caller comes in only when there are more of them than
    -- live visitors ahead of it, so a visitor further back who polls first cannot take the head's.
    local interval = 60000 / cfg.per_minute
    local burst = math.max(1, math.floor(cfg.per_minute / 12))
    local tat = math.max(tonumber(redis.call('HGET', K_STATS, 'tat') or '0'), now)
    local available = math.floor((interval * burst - (tat - now)) / interval)
    if ahead < available then
      redis.call('HSET', K_STATS, 'tat', tat + interval)
    else
      allowed = false
    end
  end
  if allowed then
    redis.call('ZREM', K_LINE, v)
    redis.call('ZREM', K_SEEN, v)
    redis.call('HDEL', K_SINCE, v)
    redis.call('ZADD', K_ACTIVE, now, v)
    redis.call('ZREM', K_RELEASED, v) -- admitted again: its passes are good again
    due_at(now + cfg.session_timeout)
    redis.call('HINCRBY', K_STATS, 'admitted', 1)
    local minute = math.floor(now / 60000)
    redis.call('HSETNX', K_STATS, 'firsta', now)
    redis.call('HINCRBY', K_MINUTES, 'a' .. minute, 1)
    if waited_before then
      redis.call('HSETNX', K_STATS, 'firstw', now)
      redis.call('HINCRBY', K_MINUTES, 'w' .. minute, 1)
    end
    trim_minutes(now)
    redis.call('LPUSH', K_WAITS, now - since)
    redis.call('LTRIM', K_WAITS, 0, 100)
    return reply(1, 0, 0, now - since)
  end
end
return reply(2, rank + 1, 0, now - since)
