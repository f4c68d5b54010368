-- delayq: take pending entries off the head of the order list, whatever their due time.
-- Mirrors: Redisson RedissonDelayedQueue#poll / poll(limit) (3.x/4.x): LPOP the order list and
-- ZREM the same entry. A malformed entry is quarantined instead of returned.
--
-- Helpers: time, guard, entry, queue, position
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: quarantine         delayq_quarantine:{NAME}
-- KEYS[6]: position index     delayq_index:{NAME} (kept in step; see lib/position.lua)
-- KEYS[7]: value index        delayq_values:{NAME} (follows the list's life: lib/values_record.lua)
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: most entries to take
-- Returns: the values, in order (malformed entries on the way are quarantined, not counted).
local legacy = ARGV[2] == '1'
local values = {}
local wanted = tonumber(ARGV[3])
-- Malformed entries do not count: poll(1) still returns the first good value.
while #values < wanted do
    local entry = redis.call('lpop', KEYS[3])
    if not entry then
        break
    end
    redis.call('zrem', KEYS[2], entry)
    delayq_position_forget(KEYS[6], entry)
    local value = delayq_value(entry, legacy)
    if value then
        values[#values + 1] = value
    else
        redis.call('rpush', KEYS[5], entry)
    end
end
delayq_tidy_index(KEYS[3], KEYS[6], KEYS[7])
return values
