-- dead_respawn.lua: move dead jobs back to ready with fresh tries and a fresh ttl.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: ttl_ms (0: the job's own ttl again, from now); ARGV[8]: limit (oldest first; used when
-- no ids are given); ARGV[9..]: ids.
-- Returns: the ids respawned.
local now = now_ms()
local ttl = tonumber(ARGV[7])
local ids = {}
if #ARGV >= 9 then
  for i = 9, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  ids = redis.call('ZRANGE', K_DEAD, 0, tonumber(ARGV[8]) - 1)
end
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
    push_ready(id, rec, false)
    save(id, rec)
    out[#out + 1] = id
  end
end
count('respawned', #out)
flush_notify()
return out
