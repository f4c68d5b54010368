-- delayq: give an in-flight value back for another attempt.
-- With a delay it becomes a normal pending entry of the delayed queue (a Java peer sees it as
-- pending, and any scheduler moves it when due); with none it goes straight back onto the target
-- list. The attempt counter is kept (or, for a value given back unprocessed, decremented).
--
-- KEYS[1]: target list        NAME
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[4]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[5]: order list         redisson_delay_queue:{NAME}
-- KEYS[6]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[7]: attempt counters   delayq_attempts:{NAME}
-- KEYS[8]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[9]: settled recently   delayq_settled:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: delay, ms
-- ARGV[3]: delivery id
-- ARGV[4]: entry format: '0' = Bc0Lc0, '1' = dLc0 (legacy)
-- ARGV[5]: random entry id: 8 raw bytes ('0'), or a random long as decimal ASCII ('1')
-- ARGV[6]: '1' when the value was not processed (shutdown): uncount the attempt, and put it
--          back at the head of the target list rather than the tail
-- Returns: 1 (also when this delivery was settled in the last minute: a retried call), or 0
-- when the delivery is no longer in flight.
if redis.call('zrem', KEYS[2], ARGV[3]) == 0 then
    redis.call('hdel', KEYS[3], ARGV[3])
    if delayq_settled(KEYS[9], ARGV[3]) then
        return 1
    end
    return 0
end
local value = redis.call('hget', KEYS[3], ARGV[3])
redis.call('hdel', KEYS[3], ARGV[3])
if not value then
    return 0
end
local now = delayq_now(ARGV[1])
local delay = tonumber(ARGV[2])
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
    local entry = delayq_pack(ARGV[4] == '1', ARGV[5], value)
    delayq_schedule(KEYS[4], KEYS[5], KEYS[6], delayq_ms(now + delay), entry)
end
delayq_remember_settled(KEYS[9], ARGV[3])
return 1
