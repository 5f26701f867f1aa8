-- publish_batch.lua: add jobs to one queue that are all due now and have no unique key or callback
-- (a ttl is fine): the batches of concurrent Publish calls the combiner sends, and PublishMany of
-- such jobs. publish.lua does the same for any job; this script takes six arguments per job where
-- publish.lua takes fourteen, and the record comes encoded by the client, where publish.lua builds
-- a 20-field Lua table per job and packs it. Both write the same record.
-- Runs only as a library function (Redis 7+, which has cmsgpack), without lib.lua's bind.
-- KEYS[1] jobs, KEYS[2] ready (the prefix of the per-priority ready lists), KEYS[3] prios,
--   KEYS[4] expiry, KEYS[5] stats, KEYS[6] due (the queue keys of lib.lua).
-- ARGV: six per job: id, priority, ttl_ms, and the record in three pieces encoded by the client
--   (record.go) as cmsgpack encodes them: the array header and R_STATE to R_TTL, R_TTR to R_BMAX,
--   R_LEASE to R_CALLBACK. The script packs R_EXPIRE (now + ttl, or 0) after the first piece and
--   R_PUBLISHED, R_DUE (now) after the second.
-- The notify channel is the jobs key's name with 'notify' for 'jobs' (keys.go), as in
-- publish_ready.lua.
-- Returns: the number of jobs written. Ids are made per publish, so an id already stored means
-- this call is being sent again (a client retry after a lost reply): that job is not written
-- twice, so it is never queued twice; its caller is answered as published all the same.
local now = now_ms()
local n = #ARGV / 6
local ids = {}
for i = 1, n do ids[i] = ARGV[i * 6 - 5] end
local stored = {}
for i = 1, n, 1000 do
  local got = redis.call('HMGET', KEYS[1], unpack(ids, i, math.min(i + 999, n)))
  for j = 1, #got do stored[i + j - 1] = got[j] end
end
local times = cmsgpack.pack(now, now)
local no_expiry = cmsgpack.pack(0)
local last_ttl, last_expiry, first_ttl
local writes, expiries, lists = {}, {}, {}
for i = 1, n do
  if not stored[i] then
    local a = i * 6 - 5
    local id, pri, ttl = ARGV[a], ARGV[a + 1], arg_num(ARGV[a + 2])
    local expiry = no_expiry
    if ttl > 0 then
      if ttl ~= last_ttl then last_ttl, last_expiry = ttl, cmsgpack.pack(now + ttl) end
      expiry = last_expiry
      expiries[#expiries + 1] = ms_str(now + ttl)
      expiries[#expiries + 1] = id
      if not first_ttl or ttl < first_ttl then first_ttl = ttl end
    end
    writes[#writes + 1] = id
    writes[#writes + 1] = ARGV[a + 3] .. expiry .. ARGV[a + 4] .. times .. ARGV[a + 5]
    append_to(lists, pri, id)
  end
end
if #writes == 0 then return 0 end
call_batched('HSET', KEYS[1], writes, 2)
-- As in publish.lua: only a push into an empty ready list adds its priority to prios and wakes
-- consumers.
if push_ready_lists(KEYS[2], KEYS[3], lists) then
  redis.call('PUBLISH', string.sub(KEYS[1], 1, -5) .. 'notify', 'r')
end
if #expiries > 0 then
  call_batched('ZADD', KEYS[4], expiries, 2)
  -- lib.lua's due_at, for a script without bind: the entry's member is the notify channel.
  redis.call('ZADD', KEYS[6], 'LT', ms_str(now + first_ttl), string.sub(KEYS[1], 1, -5) .. 'notify')
end
redis.call('HINCRBY', KEYS[5], 'published', istr(#writes / 2))
return #writes / 2
