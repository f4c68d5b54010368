-- delayq: remove pending entries by value.
-- Mirrors: Redisson RedissonDelayedQueue#remove / removeAll / retainAll (3.x/4.x): walk the order
-- list, unpack each entry, compare the value bytes. Unlike Java's retainAll, removed entries also
-- leave the timeout zset.
--
-- KEYS[1]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[2]: order list     redisson_delay_queue:{NAME}
-- KEYS[3]: position index delayq_index:{NAME} (kept in step; see transfer.lua)
-- ARGV[1]: mode: 'first' (the first entry equal to ARGV[3]), 'all' (every entry whose value is
--          one of ARGV[3..]), 'retain' (every entry whose value is none of ARGV[3..])
-- ARGV[2]: '1' when the queue prefers the legacy dLc0 reading of an ambiguous entry
-- ARGV[3..]: codec-encoded values
-- Returns: the number of entries removed. Malformed entries are never removed here.
local refused = delayq_wrong_type(KEYS[1], 'zset', KEYS[2], 'list', KEYS[3], 'zset')
if refused then
    return refused
end

local mode = ARGV[1]
local prefer_legacy = ARGV[2] == '1'
local wanted = {}
for i = 3, #ARGV do
    wanted[ARGV[i]] = true
end

local removed = 0
local entries = redis.call('lrange', KEYS[2], 0, -1)
for _, entry in ipairs(entries) do
    local value = delayq_value(entry, prefer_legacy)
    if value ~= nil then
        local hit = wanted[value] == true
        if (mode == 'retain' and not hit) or (mode ~= 'retain' and hit) then
            redis.call('lrem', KEYS[2], 1, entry)
            redis.call('zrem', KEYS[1], entry)
            redis.call('zrem', KEYS[3], string.sub(entry, 1, 9))
            removed = removed + 1
            if mode == 'first' then
                break
            end
        end
    end
end
return removed
