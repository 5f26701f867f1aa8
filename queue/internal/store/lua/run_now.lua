-- run_now.lua: make delayed jobs (scheduled, or waiting for a retry) ready now, at the tail of
-- their priority's ready list (or of the callback lane). Jobs in other states, and waiting jobs
-- past their ttl, are passed over.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7..]: job ids.
-- Returns: the ids made ready.
local now = now_ms()
local moved = {}
for i = 7, #ARGV do
  local id = ARGV[i]
  local rec = load(id)
  if rec and rec[R_STATE] == S_DELAYED and (rec[R_EXPIRE] == 0 or rec[R_EXPIRE] > now)
      and redis.call('ZREM', K_DELAYED, id) == 1 then
    rec[R_DUE] = now
    push_ready(id, rec, false)
    save(id, rec)
    moved[#moved + 1] = id
  end
end
flush_notify()
return moved
