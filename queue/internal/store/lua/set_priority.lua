-- set_priority.lua: change jobs' priority. A ready job moves to the tail of its new priority's
-- ready list (it keeps no place in line it had); a delayed, leased, dead or done job, and a
-- ready callback job (the callback lane is FIFO), keeps its place and takes the priority the
-- next time it becomes ready. Setting a job's own priority again changes nothing.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: priority; ARGV[8..]: job ids.
-- Returns: the ids changed.
local pri = tonumber(ARGV[7])
local changed = {}
for i = 8, #ARGV do
  local id = ARGV[i]
  local rec = load(id)
  if rec and rec[R_PRI] ~= pri then
    local waiting_in_line = rec[R_STATE] == S_READY and not lease_of(id) and not has_callback(rec)
    if waiting_in_line then
      local old = K_READY .. istr(rec[R_PRI])
      redis.call('LREM', old, 1, id)
      if redis.call('LLEN', old) == 0 then redis.call('ZREM', K_PRIOS, istr(rec[R_PRI])) end
      rec[R_PRI] = pri
      push_ready(id, rec, false)
    else
      rec[R_PRI] = pri
    end
    save(id, rec)
    changed[#changed + 1] = id
  end
end
flush_notify()
return changed
