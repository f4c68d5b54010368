-- delayq: move the last pending entry's value to the head of another list.
-- Mirrors: Redisson RedissonDelayedQueue#pollLastAndOfferFirstTo (3.x/4.x).
--
-- KEYS[1]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[2]: order list     redisson_delay_queue:{NAME}
-- KEYS[3]: destination list (must share the queue's cluster slot)
-- KEYS[4]: quarantine     delayq_quarantine:{NAME}
-- KEYS[5]: position index delayq_index:{NAME} (kept in step; see transfer.lua)
-- ARGV[1]: '1' when the queue prefers the legacy dLc0 reading of an ambiguous entry
-- Returns: the value moved, or false when nothing is pending. A malformed last entry is
-- quarantined and the next one tried.
local refused = delayq_wrong_type(KEYS[1], 'zset', KEYS[2], 'list', KEYS[3], 'list',
    KEYS[4], 'list', KEYS[5], 'zset')
if refused then
    return refused
end

local prefer_legacy = ARGV[1] == '1'
while true do
    local entry = redis.call('rpop', KEYS[2])
    if not entry then
        return false
    end
    redis.call('zrem', KEYS[1], entry)
    redis.call('zrem', KEYS[5], string.sub(entry, 1, 9))
    local value = delayq_value(entry, prefer_legacy)
    if value then
        redis.call('lpush', KEYS[3], value)
        return value
    end
    redis.call('rpush', KEYS[4], entry)
end
