-- delayq: offer one or more values with a delay.
-- Mirrors: Redisson RedissonDelayedQueue#offerAsync (3.x/4.x): same keys, packing and publish
-- rule.
--
-- Helpers: time, guard, entry
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3 + 3k]: delay from now, ms
-- ARGV[4 + 3k]: random entry id
-- ARGV[5 + 3k]: the codec-encoded value
-- Returns: the number of entries added (an entry already pending, i.e. a retried call, is not
-- added twice).
--
-- Like Redisson, the due time is published on the channel when a new entry became the first
-- member of the timeout zset; with several entries, at most one message (the new head's time).
local now = delayq_now(ARGV[1])
local legacy = ARGV[2] == '1'
local due_of_new = {}
local added = 0
for i = 3, #ARGV, 3 do
    local due = delayq_ms(now + tonumber(ARGV[i]))
    local entry = delayq_pack(legacy, ARGV[i + 1], ARGV[i + 2])
    -- An entry already pending is this very offer sent again after its reply was lost (ids are
    -- random per offer): appending it to the order list a second time would leave a copy there
    -- that nothing ever removes.
    if redis.call('zadd', KEYS[2], due, entry) == 1 then
        redis.call('rpush', KEYS[3], entry)
        due_of_new[entry] = due
        added = added + 1
    end
end

local head = redis.call('zrange', KEYS[2], 0, 0)[1]
if head ~= nil and due_of_new[head] ~= nil then
    redis.call('publish', KEYS[4], due_of_new[head])
end
return added
