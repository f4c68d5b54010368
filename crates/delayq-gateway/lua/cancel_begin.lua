-- delayq-gateway: begin a cancel: leave the message's cancellation (for an attempt not yet
-- made to see) and take its record out of the index, in one step.
-- Not in Redisson.
--
-- KEYS[1]: message index      delayq_gateway_messages:{QUEUE}
-- KEYS[2]: cancellation       delayq_gateway_cancelled:{QUEUE}:ID
-- ARGV[1]: the message id
-- ARGV[2]: how long the cancellation is kept, ms
-- Returns: the record that was in the index (MessagePack), or false when there was none.
local record = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
if record then
    redis.call('HDEL', KEYS[1], ARGV[1])
end
return record
