-- delayq: remove pending entries by value.
-- Mirrors: Redisson RedissonDelayedQueue#remove / removeAll / retainAll (3.x/4.x): walk the order
-- list, unpack each entry, compare the value bytes. Unlike Java's retainAll, removed entries also
-- leave the timeout zset.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME} (kept in step; see transfer.lua)
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: mode: 'first' (the first entry equal to ARGV[4]), 'all' (every entry whose value is
--          one of ARGV[4..]), 'retain' (every entry whose value is none of ARGV[4..])
-- ARGV[4..]: codec-encoded values
-- Returns: the number of entries removed. Malformed entries are never removed here.
--
-- The whole list is read before the first write, so a call that runs long on a big list can
-- still be stopped with SCRIPT KILL, having changed nothing.
local legacy = ARGV[2] == '1'
local mode = ARGV[3]
local wanted = {}
for i = 4, #ARGV do
    wanted[ARGV[i]] = true
end

-- Read: the entries to remove.
local hits = {}
for _, entry in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do
    local value = delayq_value(entry, legacy)
    if value ~= nil then
        local hit = wanted[value] == true
        if (mode == 'retain' and not hit) or (mode ~= 'retain' and hit) then
            hits[#hits + 1] = entry
            if mode == 'first' then
                break
            end
        end
    end
end
-- Write.
for _, entry in ipairs(hits) do
    redis.call('lrem', KEYS[3], 1, entry)
    redis.call('zrem', KEYS[2], entry)
    redis.call('zrem', KEYS[5], delayq_index_member(entry))
end
delayq_tidy_index(KEYS[3], KEYS[5])
return #hits
