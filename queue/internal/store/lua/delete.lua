-- delete.lua: remove jobs in any state (cancel). A leased job's consumer then gets not-found on ack.
-- KEYS: the queue keys (lib.lua).
-- ARGV[7..]: job ids.
-- Returns: the number of jobs removed.
local removed = 0
for i = 7, #ARGV do
  local rec = load(ARGV[i])
  if rec then
    forget(ARGV[i], rec)
    removed = removed + 1
  end
end
count('deleted', removed)
return removed
