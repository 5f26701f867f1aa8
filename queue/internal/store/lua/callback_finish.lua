-- callback_finish.lua: record the outcome of one try of a callback job and the try itself, in one
-- step, so the list of tries never disagrees with the job. A delivered try acks the delivery with
-- the response as the result (as ack.lua with a result does); a failed one nacks it (as nack.lua).
-- The try is pushed onto the job's list of tries (newest first), which keeps the last keep of
-- them and expires keep_ms after the last try. The lane's entry in the callback lanes' due index
-- is set from what is left (lane_settle).
-- KEYS: the queue keys (lib.lua), then KEYS[14]: the job's list of tries.
-- ARGV[7]: id; ARGV[8]: delivery; ARGV[9]: the try as a JSON object, which gets an "outcome"
-- member here; ARGV[10]: keep; ARGV[11]: keep_ms; ARGV[12]: 'ack' or 'nack'; ARGV[13]: the
-- result (ack) or the error text (nack); ARGV[14]: retry_ms (-1: the job's backoff);
-- ARGV[15]: no_retry (0|1); ARGV[16], only from a client that traces and only with a nack: the
-- failed try's span, kept as R_ATTEMPT for the next try's span to link to (as nack.lua keeps it).
-- Returns: 'delivered', 'retried', 'dead' or 'expired'; error replies 'NOT_FOUND' or 'LEASE_LOST'.
local now = now_ms()
local id = ARGV[7]
local delivery = tonumber(ARGV[8])
local rec, why = take_lease(id, delivery, now)
if not rec then return redis.error_reply(string.upper(why)) end
local outcome
if ARGV[12] == 'ack' then
  release_unique(id, rec)
  rec[R_STATE] = S_DONE
  rec[R_DELIVERY] = delivery
  rec[R_LEFT] = rec[R_LEFT] - 1
  rec[R_PAYLOAD] = ''
  rec[R_RESULT] = ARGV[13]
  rec[R_FINISHED] = now
  save(id, rec)
  redis.call('ZADD', K_DONE, ms_str(now), id)
  due_after(now, RESULT_RETENTION)
  count('acked', 1)
  trim(K_DONE, now, RESULT_RETENTION, RESULT_MAX, nil)
  outcome = 'delivered'
else
  rec[R_ATTEMPT] = ARGV[16]
  outcome = fail_delivery(id, rec, delivery, now, ARGV[13], ARGV[14], ARGV[15])
end
local tries = KEYS[14]
redis.call('LPUSH', tries, string.sub(ARGV[9], 1, -2) .. ',"outcome":"' .. outcome .. '"}')
redis.call('LTRIM', tries, 0, tonumber(ARGV[10]) - 1)
redis.call('PEXPIRE', tries, ARGV[11])
lane_settle(now, redis.call('LLEN', callbacks_key()) > 0, next_wake())
flush_notify()
return outcome
