-- delayq-gateway: claim a dead letter's retry for a while and write its record into the index
-- with its CREATED event, before the letter is replayed; unless another retry of it claimed it
-- less than the lease ago (under way, done, or its gateway died before the replay).
-- Not in Redisson.
--
-- KEYS[1]: message index      delayq_gateway_messages:{QUEUE}
-- KEYS[2]: events stream      delayq_gateway_events:{QUEUE}
-- KEYS[3]: retry claim        delayq_gateway_retrying:{QUEUE}:ID
-- ARGV[1]: the message id
-- ARGV[2]: the record (MessagePack)
-- ARGV[3]: the most events the stream keeps; '0': no event is written
-- ARGV[4]: the stream id before which events are trimmed (their age)
-- ARGV[5]: the CREATED event (JSON)
-- ARGV[6]: the lease of the claim, ms
-- Returns: {1, the event's stream id or ''} when claimed and written; {0, ''} when claimed by
-- another retry.
if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[6]) then
    return {0, ''}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local written = ''
if ARGV[3] ~= '0' then
    written = redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], '*', 'e', ARGV[5])
    redis.call('XTRIM', KEYS[2], 'MINID', ARGV[4])
end
return {1, written}
