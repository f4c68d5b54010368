-- delayq: set or clear a time to live on the delayed queue's keys.
-- Mirrors: Redisson RedissonDelayedQueue#expire / clearExpire (acting on the zset and order
-- list), plus delayq's position index, which must not outlive the order list.
--
-- KEYS[1]: target list        NAME (untouched, as in Redisson: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: time to live in milliseconds, or 'persist' to remove it
-- Returns: how many of the zset and order list were changed.
local changed = 0
for _, key in ipairs({ KEYS[2], KEYS[3] }) do
    if ARGV[3] == 'persist' then
        changed = changed + redis.call('persist', key)
    else
        changed = changed + redis.call('pexpire', key, ARGV[3])
    end
end
if ARGV[3] == 'persist' then
    redis.call('persist', KEYS[5])
else
    redis.call('pexpire', KEYS[5], ARGV[3])
end
return changed
