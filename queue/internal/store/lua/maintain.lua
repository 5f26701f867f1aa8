-- maintain.lua: the housekeeping a consume does, for queues nobody is reading: expired jobs out,
-- due jobs in, expired leases retried or dead-lettered, dead letter and results trimmed. Each step
-- moves at most the batch size, so a pass never blocks Redis for long; safe in many processes.
-- KEYS: the queue keys (lib.lua).
-- Returns: {promoted, leases reaped, dead and results dropped, next_wake_ms, now_ms} (now: the
-- client's reading of Redis's clock, clock.go).
local now = now_ms()
local promoted, reaped = housekeeping(now)
local dropped = trim(K_DEAD, now, DEAD_RETENTION, DEAD_MAX, 'dead_dropped')
dropped = dropped + trim(K_DONE, now, RESULT_RETENTION, RESULT_MAX, nil)
flush_notify()
return {promoted, reaped, dropped, next_wake(), now}
