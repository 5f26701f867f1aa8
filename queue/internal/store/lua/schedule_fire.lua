-- schedule_fire.lua: fire the due ticks of schedules of one queue: for each tick, publish its job,
-- and advance the schedule's next run, all in this one call. The call names, per schedule, the
-- next run it read (the tick it fires from) and the version of the definition it computed the
-- ticks from; a schedule whose next run or version differ (another scheduler fired that tick
-- already, or the schedule was changed, paused or deleted since) is left alone. So each tick is
-- fired once whichever schedulers race for it. A resend of this call after a lost reply changes
-- nothing and answers as the first arrival did: a schedule keeps the id of the first job of its
-- last fire with that fire's answer (fire_id, fire_published, fire_last_id), and a fire whose
-- first job is that one is the same call again (job ids are unique to a call).
-- KEYS: the queue keys (lib.lua), then KEYS[14] the queue's due zset of schedules, then one
-- schedule hash per schedule of the call, in order.
-- ARGV[7]: number of schedules n; then per schedule: name, version, the next run it fires from
--   (ms; -2: a trigger, which publishes its job and leaves the next run as it is), the new next run
--   (ms; -1: none), the ticks counted missed, the number of jobs j, then per job: its tick (ms)
--   and the 14 fields of publish.lua.
-- Returns {now, earliest next run of the queue's schedules (-1: none), then per schedule: the
--   number of jobs published (-1: left alone), then the id of the last one ('' none)}.
local now = now_ms()
local due_key = KEYS[14]

-- publish_job publishes the job whose fields start at ARGV[a]; returns its id, or nil when it
-- was not written (a resend of its id, or its unique key held by another job).
local function publish_job(a)
  local id, unique = ARGV[a], ARGV[a + 10]
  if unique ~= '' then
    local holder = unique_holder(unique, now, nil)
    if holder then return nil end
  end
  local rec = new_job_record(ARGV, a, now)
  if redis.call('HSETNX', K_JOBS, id, encode(rec)) == 0 then return nil end
  if rec[R_STATE] == S_DELAYED then
    push_delayed(id, rec, rec[R_DUE])
  else
    push_ready(id, rec, false)
  end
  if unique ~= '' then redis.call('SET', K_UNIQUE .. unique, id, 'PX', ARGV[a + 11]) end
  count('published', 1)
  return id
end

local n = arg_num(ARGV[7])
local out = {now, -1}
local a = 8
for i = 1, n do
  local k = KEYS[14 + i]
  local name, version, from, next_run = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local missed, jobs = arg_num(ARGV[a + 4]), arg_num(ARGV[a + 5])
  local first_job = a + 6
  a = first_job + jobs * 15
  local cur = redis.call('HMGET', k, 'version', 'next_run', 'paused', 'fire_id', 'fire_published', 'fire_last_id')
  local first_id = jobs > 0 and ARGV[first_job + 1] or nil
  local ok = cur[1] == version
  if ok and from ~= '-2' then ok = cur[2] == from and cur[3] == '0' end
  if first_id and cur[4] == first_id then
    out[#out + 1] = tonumber(cur[5])
    out[#out + 1] = cur[6]
  elseif not ok then
    out[#out + 1] = -1
    out[#out + 1] = ''
  else
    local published, last_id, last_tick = 0, '', nil
    for j = 0, jobs - 1 do
      local b = first_job + j * 15
      local id = publish_job(b + 1)
      if id then published, last_id, last_tick = published + 1, id, ARGV[b] end
    end
    if last_tick then
      redis.call('HSET', k, 'last_run', last_tick, 'last_job_id', last_id)
      redis.call('HINCRBY', k, 'fires', published)
    end
    if first_id then
      redis.call('HSET', k, 'fire_id', first_id, 'fire_published', published, 'fire_last_id', last_id)
    end
    if from ~= '-2' then
      if missed > 0 then redis.call('HINCRBY', k, 'missed', missed) end
      redis.call('HSET', k, 'next_run', next_run)
      if next_run == '-1' then
        redis.call('ZREM', due_key, name)
      else
        redis.call('ZADD', due_key, next_run, name)
      end
    end
    out[#out + 1] = published
    out[#out + 1] = last_id
  end
end
local first = redis.call('ZRANGE', due_key, '0', '0', 'WITHSCORES')
if first[2] then out[2] = tonumber(first[2]) end
flush_notify()
return out
