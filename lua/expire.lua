-- delayq: set or clear a time to live on the delayed queue's keys.
-- Mirrors: Redisson RedissonDelayedQueue#expire / clearExpire (acting on the zset and order
-- list), plus every key of delayq's own for the queue, which must not outlive it. The record of
-- settled deliveries keeps its own life of a minute: it gets the time to live only when that is
-- shorter, and keeps its own when the time to live is removed.
--
-- Helpers: guard
-- KEYS[1]: target list        NAME (untouched, as in Redisson: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: quarantine         delayq_quarantine:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME}
-- KEYS[6]: value index        delayq_values:{NAME}
-- KEYS[7]: pause flag         delayq_paused:{NAME}
-- KEYS[8]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[9]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[10]: attempt counters  delayq_attempts:{NAME}
-- KEYS[11]: counters touched  delayq_attempts_seen:{NAME}
-- KEYS[12]: settled recently  delayq_settled:{NAME}
-- KEYS[13]: dead letters      delayq_dead:{NAME}
-- KEYS[14]: claim leases      delayq_claims:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: time to live in milliseconds, or 'persist' to remove it
-- Returns: how many of the zset and order list were changed (as Redisson counts).
local SETTLED = 12
local function apply(key)
    if ARGV[3] == 'persist' then
        return redis.call('persist', key)
    end
    return redis.call('pexpire', key, ARGV[3])
end
local changed = apply(KEYS[2]) + apply(KEYS[3])
for i = 4, #KEYS do
    if i ~= SETTLED then
        apply(KEYS[i])
    elseif ARGV[3] ~= 'persist' then
        local left = redis.call('pttl', KEYS[i])
        if left < 0 or left > tonumber(ARGV[3]) then
            apply(KEYS[i])
        end
    end
end
return changed
