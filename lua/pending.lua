-- delayq: the first pending entries in offer order, with their due times (for peek/inspection).
-- Not in Redisson (Java reads the order list and scores one by one).
--
-- Helpers: guard
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used; the client unpacks)
-- ARGV[3]: most entries to return (0 or less: all)
-- Returns: a flat list { entry1, score1, entry2, score2, ... }; a score is false when the entry
-- has no zset member (left behind by Java's retainAll).
local last = tonumber(ARGV[3]) - 1
local entries = redis.call('lrange', KEYS[3], 0, last)
local out = {}
for _, entry in ipairs(entries) do
    out[#out + 1] = entry
    out[#out + 1] = redis.call('zscore', KEYS[2], entry) or false
end
return out
