-- Wait's check: whether the record still has the version and token a
-- waiter saw, and if so, mark that someone waits on it, so that the next
-- write of it publishes on the bucket's channel.
--
-- KEYS: 1 record, 2 waited; ARGV: 1 member, 2 version, 3 token (hex)
-- Reply: 1 changed, 0 unchanged (and marked)
local v = redis.call('HMGET', KEYS[1], 'v', 't')
local version, tok = v[1] or '0', v[2] or '0'
if version ~= ARGV[2] or tok ~= ARGV[3] then return 1 end
redis.call('SADD', KEYS[2], ARGV[1])
return 0
