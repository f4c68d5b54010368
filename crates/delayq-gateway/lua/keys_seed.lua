-- delayq-gateway: seed the signing keys unless the hash has both already.
-- Not in Redisson.
--
-- KEYS[1]: signing keys       delayq_gateway_keys:{QUEUE}
-- ARGV[1]: the current key given
-- ARGV[2]: the next key given
-- Returns: { current, next }: the keys in effect.
local k = redis.call('HMGET', KEYS[1], 'current', 'next')
if k[1] and k[2] then
    return k
end
redis.call('HSET', KEYS[1], 'current', ARGV[1], 'next', ARGV[2])
return { ARGV[1], ARGV[2] }
