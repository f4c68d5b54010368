-- delayq: set or clear a time to live on the delayed queue's keys.
-- Mirrors: Redisson RedissonDelayedQueue#expire / clearExpire (acting on the zset and order
-- list), plus every key of delayq's own for the queue, which must not outlive it (the record of
-- settled deliveries keeps its own one-minute life).
--
-- KEYS[1]: target list        NAME (untouched, as in Redisson: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: quarantine         delayq_quarantine:{NAME}
-- KEYS[6]: position index     delayq_index:{NAME}
-- KEYS[7]: value index        delayq_values:{NAME}
-- KEYS[8]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[9]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[10]: attempt counters  delayq_attempts:{NAME}
-- KEYS[11]: counters touched  delayq_attempts_seen:{NAME}
-- KEYS[12]: dead letters      delayq_dead:{NAME}
-- KEYS[13]: claim leases      delayq_claims:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: time to live in milliseconds, or 'persist' to remove it
-- Returns: how many of the zset and order list were changed (as Redisson counts).
local function apply(key)
    if ARGV[3] == 'persist' then
        return redis.call('persist', key)
    end
    return redis.call('pexpire', key, ARGV[3])
end
local changed = apply(KEYS[2]) + apply(KEYS[3])
for i = 5, 13 do
    apply(KEYS[i])
end
return changed
