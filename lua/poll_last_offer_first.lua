-- delayq: move the last pending entry's value to the head of another list.
-- Mirrors: Redisson RedissonDelayedQueue#pollLastAndOfferFirstTo (3.x/4.x).
--
-- Helpers: time, guard, entry, queue, position
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: quarantine         delayq_quarantine:{NAME}
-- KEYS[6]: position index     delayq_index:{NAME} (kept in step; see lib/position.lua)
-- KEYS[7]: value index        delayq_values:{NAME} (follows the list's life: lib/values_record.lua)
-- KEYS[8]: destination list   DESTINATION (must share the queue's cluster slot)
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- Returns: the value moved, or false when nothing is pending. A malformed last entry is
-- quarantined and the next one tried.
local legacy = ARGV[2] == '1'
while true do
    local entry = redis.call('rpop', KEYS[3])
    if not entry then
        delayq_tidy_index(KEYS[3], KEYS[6], KEYS[7])
        return false
    end
    redis.call('zrem', KEYS[2], entry)
    delayq_position_forget(KEYS[6], entry)
    local value = delayq_value(entry, legacy)
    if value then
        redis.call('lpush', KEYS[8], value)
        delayq_tidy_index(KEYS[3], KEYS[6], KEYS[7])
        return value
    end
    redis.call('rpush', KEYS[5], entry)
end
