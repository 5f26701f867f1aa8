-- secret_rotate.lua: make a new secret the namespace's signing secret. The previous one
-- stays live (deliveries are signed with both) until it is retired or the next rotation pushes it
-- out: at most two secrets are ever kept.
-- KEYS[1]: the namespace's secrets list (newest first).
-- ARGV[1]: the new secret.
-- Returns: the live secrets, newest first.
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, 1)
return redis.call('LRANGE', KEYS[1], 0, -1)
