-- delayq: take pending entries off the head of the order list, whatever their due time.
-- Mirrors: Redisson RedissonDelayedQueue#poll / poll(limit) (3.x/4.x): LPOP the order list and
-- ZREM the same entry. A malformed entry is quarantined instead of returned.
--
-- KEYS[1]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[2]: order list     redisson_delay_queue:{NAME}
-- KEYS[3]: quarantine     delayq_quarantine:{NAME}
-- KEYS[4]: position index delayq_index:{NAME} (kept in step; see transfer.lua)
-- ARGV[1]: most entries to take
-- ARGV[2]: '1' when the queue prefers the legacy dLc0 reading of an ambiguous entry
-- Returns: the values, in order (malformed entries on the way are quarantined, not counted).
local prefer_legacy = ARGV[2] == '1'
local refused = delayq_wrong_type(KEYS[1], 'zset', KEYS[2], 'list', KEYS[3], 'list',
    KEYS[4], 'zset')
if refused then
    return refused
end
local values = {}
local wanted = tonumber(ARGV[1])
-- Malformed entries do not count: poll(1) still returns the first good value.
while #values < wanted do
    local entry = redis.call('lpop', KEYS[2])
    if not entry then
        break
    end
    redis.call('zrem', KEYS[1], entry)
    redis.call('zrem', KEYS[4], string.sub(entry, 1, 9))
    local value = delayq_value(entry, prefer_legacy)
    if value then
        values[#values + 1] = value
    else
        redis.call('rpush', KEYS[3], entry)
    end
end
return values
