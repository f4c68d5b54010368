-- delayq-gateway: add events to the stream, in order, capped by count and trimmed by age.
-- Not in Redisson.
--
-- KEYS[1]: events stream      delayq_gateway_events:{QUEUE}
-- ARGV[1]: the most events the stream keeps
-- ARGV[2]: the stream id before which events are trimmed (their age)
-- ARGV[3..]: the events (JSON), oldest first
-- Returns: the stream ids of the events, in order.
local ids = {}
for i = 3, #ARGV do
    ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'e', ARGV[i])
end
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[2])
return ids
