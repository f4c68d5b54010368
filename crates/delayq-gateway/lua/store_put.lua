-- delayq-gateway: write a message's first record into the index and its CREATED event, before
-- its entry is offered (so no event of a fast delivery comes before CREATED).
-- Not in Redisson.
--
-- KEYS[1]: message index      delayq_gateway_messages:{QUEUE}
-- KEYS[2]: events stream      delayq_gateway_events:{QUEUE}
-- ARGV[1]: the message id
-- ARGV[2]: the record (MessagePack)
-- ARGV[3]: the most events the stream keeps; '0': no event is written
-- ARGV[4]: the stream id before which events are trimmed (their age)
-- ARGV[5]: the CREATED event (JSON)
-- Returns: 1.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] ~= '0' then
    redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], '*', 'e', ARGV[5])
    redis.call('XTRIM', KEYS[2], 'MINID', ARGV[4])
end
return 1
