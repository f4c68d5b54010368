-- delayq: offer one or more values with a delay.
-- Mirrors: Redisson RedissonDelayedQueue#offerAsync (3.x/4.x), same keys, packing and publish rule.
--
-- KEYS[1]: target list (not written; keeps the call in the queue's slot)
-- KEYS[2]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list     redisson_delay_queue:{NAME}
-- KEYS[4]: channel        redisson_delay_queue_channel:{NAME}
-- ARGV[1]: entry format: '0' = Bc0Lc0 (Redisson >= 3.21.1), '1' = dLc0 (legacy); a second
--          character 's' (e.g. '0s') means the due fields are delays in ms to add to the Redis
--          server's clock (TIME) instead of due times (delayq's Clock::Server)
-- ARGV[2 + 3k]: due time, epoch milliseconds as decimal ASCII (or the delay, see ARGV[1])
-- ARGV[3 + 3k]: random id: 8 raw bytes ('0'), or a random long as decimal ASCII ('1')
-- ARGV[4 + 3k]: the codec-encoded value
-- Returns: the number of entries added (an entry already pending, i.e. a retried call, is not
-- added twice).
--
-- Like Redisson, the due time is published on the channel when a new entry became the first
-- member of the timeout zset; with several entries, at most one message (the new head's time).
local refused = delayq_wrong_type(KEYS[2], 'zset', KEYS[3], 'list')
if refused then
    return refused
end

local legacy = string.sub(ARGV[1], 1, 1) == '1'
local server_now = nil
if string.sub(ARGV[1], 2, 2) == 's' then
    local t = redis.call('time')
    server_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local due_of_new = {}
local added = 0
for i = 2, #ARGV, 3 do
    local due, id, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if server_now then
        due = string.format('%.0f', server_now + tonumber(due))
    end
    local entry
    if legacy then
        entry = struct.pack('dLc0', tonumber(id), string.len(value), value)
    else
        entry = struct.pack('Bc0Lc0', string.len(id), id, string.len(value), value)
    end
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
