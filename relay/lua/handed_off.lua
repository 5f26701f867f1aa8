-- handed_off.lua: forget ended tasks in one hand-off set once they were handed on (the archive,
-- or the callback queue for completion callbacks). A task whose final status was read kept its
-- finished retention while it waited (get.lua); now it gets the read retention, unless it still
-- waits in the other hand-off set.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] which set: archive | completions; then the task ids.
-- Returns the number of ids that were in the set.
local set = ARGV[8] == 'archive' and K_ARCH or K_DONE
local n = 0
for i = 9, #ARGV do
  local id = ARGV[i]
  n = n + redis.call('ZREM', set, id)
  local tk = task_key(id)
  if redis.call('HGET', tk, 'rd') == '1' and not handing_off(id) then
    local ttl = redis.call('PTTL', tk)
    if ttl < 0 or ttl > READ_TTL then redis.call('PEXPIRE', tk, READ_TTL) end
  end
end
return n
