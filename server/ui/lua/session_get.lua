-- session_get.lua: look a dashboard session up and, when it is live, push its idle timeout back.
-- A session is live while its hash exists (the idle timeout), its lifetime has not ended, the
-- sessions' epoch is the one it was made in (no "log out everywhere" since), and it was made
-- under the server's admin token. A dead one is deleted.
--
-- KEYS[1]  the session's hash (session_new.lua)
-- KEYS[2]  the sessions' epoch
-- ARGV[1]  the fingerprint of the server's admin token
-- ARGV[2]  idle timeout in ms
-- Returns: {the session's CSRF token, its namespace ('' for an admin session), its token id}, or
-- false when there is no live session. Sent twice it answers the same.
local rec = redis.call('HMGET', KEYS[1], 'csrf', 'fp', 'epoch', 'ends', 'ns', 'tok')
if not rec[1] then
  return false
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = redis.call('GET', KEYS[2]) or '0'
local ends = tonumber(rec[4]) or 0
if rec[2] ~= ARGV[1] or rec[3] ~= epoch or ends <= now then
  redis.call('DEL', KEYS[1])
  return false
end
redis.call('PEXPIRE', KEYS[1], math.min(ends - now, tonumber(ARGV[2])))
return {rec[1], rec[5] or '', rec[6] or ''}
