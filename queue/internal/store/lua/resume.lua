-- resume.lua: let consumers get jobs of a paused queue again, wake the ones waiting, and mark the
-- queue's callback lane due when jobs wait on it (a paused lane keeps no entry in the callback
-- lanes' due index: consume_callbacks.lua), so deliverers find them. One call, so no crash leaves
-- a resumed queue with a lane nobody visits.
-- KEYS: the queue keys (lib.lua).
-- Returns: 1.
redis.call('HDEL', K_META, 'paused')
redis.call('PUBLISH', CHANNEL, 'r')
if redis.call('LLEN', callbacks_key()) > 0 then
  lane_due(now_ms())
  notify_callbacks = true
  flush_notify()
end
return 1
