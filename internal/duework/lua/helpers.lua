-- The due index's helpers, which packages add to their own Lua helpers (duework.LuaHelpers).

-- due_set sets member's entry in the due index shard due_key to the earliest due time of zsets,
-- a list of {key, after}: the first score of key plus after (ms); it removes the entry when every
-- zset is empty. A maintain script calls it once it has done what was due, so a pass visits the
-- thing again only when its next work is due (or at once when a batch left some).
local function due_set(due_key, member, zsets)
  local next_due
  for _, z in ipairs(zsets) do
    local first = redis.call('ZRANGE', z[1], '0', '0', 'WITHSCORES')
    if first[2] then
      local due = tonumber(first[2]) + z[2]
      if not next_due or due < next_due then next_due = due end
    end
  end
  if next_due then
    redis.call('ZADD', due_key, string.format('%d', math.floor(next_due)), member)
  else
    redis.call('ZREM', due_key, member)
  end
end
