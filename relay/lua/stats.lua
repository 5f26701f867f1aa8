-- stats.lua: an endpoint's live numbers (read only, O(1) but for the 60-field ring).
-- KEYS, ARGV[1..7]: lib.lua.
-- Returns {queued, retrying, running (slots included), now_ms, ring (HGETALL), counts (HGETALL),
-- slots, the rate limit's next token time (ms, a float as a string; false when none)}.
return {redis.call('ZCARD', K_QUEUE), redis.call('ZCARD', K_DELAYED), redis.call('ZCARD', K_RUN), now_ms(),
  redis.call('HGETALL', K_RING), redis.call('HGETALL', K_COUNTS), redis.call('ZCARD', K_SLOTS), redis.call('GET', K_RATE)}
