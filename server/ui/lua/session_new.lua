-- session_new.lua: store a new dashboard session. It lives at most ARGV[3] ms, and ARGV[4] ms
-- from its last use (session_get.lua), and ends at once when the sessions' epoch moves on ("log
-- out everywhere") or its admin token fingerprint is no longer the server's (a rotated token).
--
-- KEYS[1]  the session's hash (fields csrf, fp, epoch, ends, ns, tok)
-- KEYS[2]  the sessions' epoch (a counter; absent is 0)
-- ARGV[1]  the session's CSRF token
-- ARGV[2]  the fingerprint of the admin token it was made under
-- ARGV[3]  lifetime in ms
-- ARGV[4]  idle timeout in ms
-- ARGV[5]  the namespace a session opened with a namespace token is limited to ('' for an admin
--          session); ARGV[6] the id of that token
-- Returns: 1. Sent twice it stores the same session again.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = redis.call('GET', KEYS[2]) or '0'
local lifetime = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'csrf', ARGV[1], 'fp', ARGV[2], 'epoch', epoch, 'ends', now + lifetime,
  'ns', ARGV[5], 'tok', ARGV[6])
redis.call('PEXPIRE', KEYS[1], math.min(lifetime, tonumber(ARGV[4])))
return 1
