-- late.lua: record when offline calls that started late really started, so that the rate limit
-- holds as the endpoint sees it. take.lua logs each call in the start log at its token's time; a
-- call that started L ms later counts from then on, in every second that reaches L ms further,
-- and take.lua moves the tokens that would put too many calls into such a second (lib.lua
-- rate_tokens). Only what the second needs is moved: a late call whose second has room (calls
-- were lost to a stall, or a token was not used in time) moves nothing.
-- KEYS, ARGV[1..7]: lib.lua.
-- ARGV[8] n, then n pairs: task id, how late its call started (ms, may be fractional)
-- Returns the number of calls recorded.
local now = now_ms()
local n = tonumber(ARGV[8])
local recorded, last = 0, 0
for i = 0, n - 1 do
  local id, late = ARGV[9 + 2 * i], tonumber(ARGV[10 + 2 * i])
  local v = redis.call('HMGET', task_key(id), 'att', 'sa')
  if v[1] and v[2] and late and late > 0 then
    -- sa is the token's time rounded down: the start is taken up to 1 ms later than exact. (Not
    -- from the logged time, which an earlier report of the call may have moved already: a report
    -- sent twice must not count its lateness twice.) GT: a start is never moved back.
    local start = tonumber(v[2]) + 1 + late
    redis.call('ZADD', K_STARTS, 'GT', num_str(start), id .. '#' .. v[1])
    last = math.max(last, start)
    recorded = recorded + 1
  end
end
if recorded > 0 then
  local need = math.ceil(last - now) + 1000
  if redis.call('PTTL', K_STARTS) < need then redis.call('PEXPIRE', K_STARTS, int_str(need)) end
end
return recorded
