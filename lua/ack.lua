-- delayq: acknowledge an in-flight value: it is done, forget it and its attempt counter.
--
-- KEYS[1]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[2]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[3]: attempt counters   delayq_attempts:{NAME}
-- KEYS[4]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[5]: settled recently   delayq_settled:{NAME}
-- ARGV[1]: delivery id
-- Returns: 1 (also when this delivery was settled in the last minute: a retried call), or 0 when
-- the delivery is no longer in flight (its deadline passed and a reaper returned it).
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
    redis.call('hdel', KEYS[2], ARGV[1])
    if delayq_settled(KEYS[5], ARGV[1]) then
        return 1
    end
    return 0
end
local value = redis.call('hget', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[2], ARGV[1])
if value then
    redis.call('hdel', KEYS[3], value)
    redis.call('zrem', KEYS[4], value)
end
delayq_remember_settled(KEYS[5], ARGV[1])
return 1
