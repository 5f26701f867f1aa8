-- list.lua: a page of one of an endpoint's lists of unfinished tasks, in list order (read only;
-- O(log n + count)).
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] list: pending (the queue, in start order) | retrying (delayed, soonest due first) |
--         running (calls in flight, permits out and slots held by callers, soonest end first)
-- ARGV[9] offset (members to skip)  ARGV[10] count (at most; the Go side caps it)
-- Returns {size of the list, entries}: each entry {member, score (queue: its order; delayed: due
-- ms; running: lease, permit or slot end ms), fields or false (a slot, or a task that is gone)}.
-- The fields are lib.lua's task_fields but for the result headers and body, which a listing does
-- not show (a retried task keeps its last answer): the page stays small whatever the tasks hold.
local set = K_QUEUE
if ARGV[8] == 'retrying' then set = K_DELAYED elseif ARGV[8] == 'running' then set = K_RUN end
local off, n = tonumber(ARGV[9]), tonumber(ARGV[10])
local members = redis.call('ZRANGE', set, off, off + n - 1, 'WITHSCORES')
local out = {}
for i = 1, #members, 2 do
  local tk = task_key(members[i])
  local f = false
  if redis.call('EXISTS', tk) == 1 then
    -- '-' stands for the result headers (rh) and body (res): no task has a field of that name.
    f = redis.call('HMGET', tk, 'id', 'ep', 'st', 'pri', 'subj', 'ty', 'ca', 'sa', 'ea', 'att', 'tries',
      'hs', '-', '-', 'rt', 'err', 'pe', 'pu', 'dur', 'm', 'u', 'ns', 'cb')
  end
  out[#out + 1] = {members[i], members[i + 1], f}
end
return {redis.call('ZCARD', set), out}
