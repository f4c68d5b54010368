-- delayq-gateway: a delivered message's record leaves the index, kept readable for a while.
-- Not in Redisson.
--
-- KEYS[1]: message index      delayq_gateway_messages:{QUEUE}
-- KEYS[2]: kept record        delayq_gateway_delivered:{QUEUE}:ID
-- ARGV[1]: the message id
-- ARGV[2]: how long the record is kept, ms
-- Returns: 1 when the record was in the index, else 0.
local record = redis.call('HGET', KEYS[1], ARGV[1])
if record then
    redis.call('SET', KEYS[2], record, 'PX', ARGV[2])
end
return redis.call('HDEL', KEYS[1], ARGV[1])
