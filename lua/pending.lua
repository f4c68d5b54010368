-- delayq: the first pending entries in offer order, with their due times (for peek/inspection).
--
-- KEYS[1]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[2]: order list     redisson_delay_queue:{NAME}
-- ARGV[1]: most entries to return (0 or less: all)
-- Returns: a flat list { entry1, score1, entry2, score2, ... }; a score is false when the entry
-- has no zset member (left behind by Java's retainAll).
local last = tonumber(ARGV[1]) - 1
local entries = redis.call('lrange', KEYS[2], 0, last)
local out = {}
for _, entry in ipairs(entries) do
    out[#out + 1] = entry
    out[#out + 1] = redis.call('zscore', KEYS[1], entry) or false
end
return out
