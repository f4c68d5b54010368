-- delayq-gateway: rotate the signing keys: the next key becomes the current one, a fresh one
-- the next.
-- Not in Redisson.
--
-- KEYS[1]: signing keys       delayq_gateway_keys:{QUEUE}
-- ARGV[1]: the fresh next key
-- Returns: { current, next } after the rotation, or an error when there are no keys.
local n = redis.call('HGET', KEYS[1], 'next')
if not n then
    return redis.error_reply('no signing keys')
end
redis.call('HSET', KEYS[1], 'current', n, 'next', ARGV[1])
return { n, ARGV[1] }
