-- completions_claim.lua: claim the completion callbacks of ended tasks that are due to be handed
-- to the callback queue. A claimed callback stays in KEYS[15], due again at the claim's end: the
-- claimer removes it once handed on (handed_off.lua), and if the claimer dies, the next claim
-- after that time takes it up (at least once). Concurrent claimers never get the same callback
-- while a claim runs.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] most callbacks to claim  [9] claim (ms)
-- Returns the claimed tasks, each its fields (lib.lua task_fields). A marked task whose hash is
-- gone (expired) is forgotten.
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', K_DONE, '-inf', int_str(now), 'LIMIT', '0', ARGV[8])
local until_s = int_str(now + tonumber(ARGV[9]))
local out = {}
for _, id in ipairs(due) do
  local f = task_fields(task_key(id))
  if f[1] then
    redis.call('ZADD', K_DONE, until_s, id)
    out[#out + 1] = f
  else
    redis.call('ZREM', K_DONE, id)
  end
end
if #out > 0 then due_at(now + tonumber(ARGV[9])) end
return out
