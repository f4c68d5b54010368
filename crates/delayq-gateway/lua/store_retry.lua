-- delayq-gateway: write the record of a dead letter about to be retried into the index, with
-- its CREATED event, unless the index holds a record of it: a dead letter has none (its record
-- left the index when it was given up), so one there is another retry's of it, under way or
-- done, and that retry replays the letter.
-- Not in Redisson.
--
-- KEYS[1]: message index      delayq_gateway_messages:{QUEUE}
-- KEYS[2]: events stream      delayq_gateway_events:{QUEUE}
-- ARGV[1]: the message id
-- ARGV[2]: the record (MessagePack)
-- ARGV[3]: the most events the stream keeps; '0': no event is written
-- ARGV[4]: the stream id before which events are trimmed (their age)
-- ARGV[5]: the CREATED event (JSON)
-- Returns: {1, the event's stream id or ''} when written; {0, ''} when a record was there.
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
    return {0, ''}
end
local written = ''
if ARGV[3] ~= '0' then
    written = redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], '*', 'e', ARGV[5])
    redis.call('XTRIM', KEYS[2], 'MINID', ARGV[4])
end
return {1, written}
