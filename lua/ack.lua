-- delayq: acknowledge an in-flight value: it is done, forget it and its attempt counter.
-- Not in Redisson.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[6]: settled recently   delayq_settled:{NAME}
-- ARGV[1]: now (not used; settling is noted by the server's clock)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: delivery id
-- Returns: 1 (also when this delivery was settled in the last minute: a retried call), or 0 when
-- the delivery is no longer in flight (its deadline passed and a reaper returned it).
local value, reply = delayq_leave_flight(KEYS[2], KEYS[3], KEYS[6], ARGV[3])
if reply then
    return reply
end
if value then
    redis.call('hdel', KEYS[4], value)
    redis.call('zrem', KEYS[5], value)
end
delayq_remember_settled(KEYS[6], ARGV[3])
return 1
