-- dead_delete.lua: remove jobs from the dead letter.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7]: limit (oldest first; used when no ids are given); ARGV[8..]: ids.
-- Returns: the number removed.
local ids = dead_targets(ARGV, 8, tonumber(ARGV[7]))
local removed = 0
for _, id in ipairs(ids) do
  local rec = load(id)
  if rec and rec[R_STATE] == S_DEAD then
    forget(id, rec)
    removed = removed + 1
  end
end
return removed
