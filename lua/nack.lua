-- delayq: give an in-flight value back for another attempt.
-- Not in Redisson. With a delay it becomes a normal pending entry of the delayed queue (a Java
-- peer sees it as pending, and any scheduler moves it when due); with none it goes straight back
-- onto the target list. The attempt counter is kept (or, for a value given back unprocessed,
-- decremented).
--
-- Helpers: time, guard, entry, queue, settle
-- KEYS[1]: target list        NAME
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[6]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[7]: attempt counters   delayq_attempts:{NAME}
-- KEYS[8]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[9]: settled recently   delayq_settled:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: delay, ms
-- ARGV[4]: delivery id
-- ARGV[5]: random entry id
-- ARGV[6]: '1' when the value was not processed (shutdown): uncount the attempt, and put it
--          back at the head of the target list rather than the tail
-- Returns: 1 (also when this delivery was settled in the last minute: a retried call), or 0
-- when the delivery is no longer in flight.
local value, reply = delayq_leave_flight(KEYS[5], KEYS[6], KEYS[9], ARGV[4])
if reply then
    return reply
end
if not value then
    return 0
end
local now = delayq_now(ARGV[1])
local delay = tonumber(ARGV[3])
local unprocessed = ARGV[6] == '1'
if unprocessed then
    local left = redis.call('hincrby', KEYS[7], value, -1)
    if left <= 0 then
        redis.call('hdel', KEYS[7], value)
        redis.call('zrem', KEYS[8], value)
    end
else
    redis.call('zadd', KEYS[8], delayq_ms(now), value)
end
if delay <= 0 then
    if unprocessed then
        redis.call('lpush', KEYS[1], value)
    else
        redis.call('rpush', KEYS[1], value)
    end
else
    local entry = delayq_pack(ARGV[2] == '1', ARGV[5], value)
    delayq_schedule(KEYS[2], KEYS[3], KEYS[4], delayq_ms(now + delay), entry)
end
delayq_remember_settled(KEYS[9], ARGV[4])
return 1
