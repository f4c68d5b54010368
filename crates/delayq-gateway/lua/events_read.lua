-- delayq-gateway: read a page of events, newest first.
-- Not in Redisson.
--
-- KEYS[1]: events stream      delayq_gateway_events:{QUEUE}
-- ARGV[1]: the end of the page: '+', or '(ID' (before the stream id ID)
-- ARGV[2]: the most events read
-- Returns: { id, JSON, id, JSON, ... }.
local found = redis.call('XREVRANGE', KEYS[1], ARGV[1], '-', 'COUNT', ARGV[2])
local out = {}
for _, entry in ipairs(found) do
    out[#out + 1] = entry[1]
    out[#out + 1] = entry[2][2] or ''
end
return out
