-- dead_respawn.lua: move dead jobs back to ready with fresh tries and a fresh ttl.
-- A job with a unique key freed it when it died; live again, it takes the key back when no other
-- pending job holds it, as a publish would: the key names the job for unique_for_ms (the window a
-- publish gives, Config.DefaultUniqueFor: the job's own window is not kept) or until the job is
-- acked, dies, expires or is deleted. When another pending job holds the key (it was published with
-- the key while this one was dead, or respawned before it in this call), the job is respawned all
-- the same but without its unique key: the record's key is cleared, so Get shows that it holds none
-- and it never frees, or later takes, the other job's key.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: ttl_ms (0: the job's own ttl again, from now); ARGV[8]: unique_for_ms; ARGV[9]: limit
-- (oldest first; used when no ids are given); ARGV[10..]: ids.
-- Returns: the ids respawned.
local now = now_ms()
local ttl = tonumber(ARGV[7])
local unique_for = tonumber(ARGV[8])
local ids = dead_targets(ARGV, 10, tonumber(ARGV[9]))

local out = {}
for _, id in ipairs(ids) do
  local rec = load(id)
  if rec and rec[R_STATE] == S_DEAD then
    redis.call('ZREM', K_DEAD, id)
    local life = ttl
    if life <= 0 then life = rec[R_TTL] end
    rec[R_TTL] = life
    rec[R_EXPIRE] = 0
    if life > 0 then rec[R_EXPIRE] = now + life end
    rec[R_LEFT] = rec[R_TRIES]
    rec[R_FINISHED] = 0
    rec[R_DUE] = now
    local u = rec[R_UNIQUE]
    if u ~= '' then
      local holder = unique_holder(u, now)
      if holder and holder ~= id then
        rec[R_UNIQUE] = ''
      else
        redis.call('SET', K_UNIQUE .. u, id, 'PX', unique_for)
      end
    end
    push_ready(id, rec, false)
    save(id, rec)
    out[#out + 1] = id
  end
end
count('respawned', #out)
flush_notify()
return out
