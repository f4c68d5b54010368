-- delayq: move an in-flight value to the dead-letter list.
--
-- KEYS[1]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[2]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[3]: attempt counters   delayq_attempts:{NAME}
-- KEYS[4]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[5]: dead letters       delayq_dead:{NAME}
-- KEYS[6]: settled recently   delayq_settled:{NAME}
-- ARGV[1]: delivery id
-- ARGV[2]: the record's header, built by the client (src/reliable/dead.rs); the value bytes
--          are appended to it here
-- ARGV[3]: most dead letters kept (the oldest are trimmed), 0 for no limit
-- Returns: 1 (also when this delivery was settled in the last minute: a retried call), or 0
-- when the delivery is no longer in flight.
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
    redis.call('hdel', KEYS[2], ARGV[1])
    if delayq_settled(KEYS[6], ARGV[1]) then
        return 1
    end
    return 0
end
local value = redis.call('hget', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[2], ARGV[1])
if not value then
    return 0
end
redis.call('hdel', KEYS[3], value)
redis.call('zrem', KEYS[4], value)
redis.call('rpush', KEYS[5], ARGV[2] .. value)
local keep = tonumber(ARGV[3])
if keep > 0 then
    redis.call('ltrim', KEYS[5], -keep, -1)
end
delayq_remember_settled(KEYS[6], ARGV[1])
return 1
