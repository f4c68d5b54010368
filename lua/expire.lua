-- delayq: set or clear a time to live on the delayed queue's keys.
-- Mirrors: Redisson RedissonDelayedQueue#expire / clearExpire (acting on the zset and order list).
--
-- KEYS[1]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[2]: order list     redisson_delay_queue:{NAME}
-- ARGV[1]: time to live in milliseconds, or 'persist' to remove it
-- Returns: how many keys were changed.
local changed = 0
for _, key in ipairs(KEYS) do
    if ARGV[1] == 'persist' then
        changed = changed + redis.call('persist', key)
    else
        changed = changed + redis.call('pexpire', key, ARGV[1])
    end
end
return changed
