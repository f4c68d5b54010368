-- delayq: take values off the target list into the in-flight set (reliable consumer).
-- Not in Redisson. LPOP and registration happen in one script, so a value is always either on
-- the target list or in flight with a deadline, whatever happens to the taking process.
--
-- KEYS[1]: target list        NAME
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}  value bytes -> last touch ms
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: visibility timeout, ms
-- ARGV[3..]: fresh delivery ids, one per value wanted
-- Returns: { deadline ms, id1, value1, attempt1, id2, value2, attempt2, ... }
local now = delayq_now(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local out = { deadline }
for i = 3, #ARGV do
    local value = redis.call('lpop', KEYS[1])
    if not value then
        break
    end
    local id = ARGV[i]
    redis.call('zadd', KEYS[2], delayq_ms(deadline), id)
    redis.call('hset', KEYS[3], id, value)
    local attempt = redis.call('hincrby', KEYS[4], value, 1)
    redis.call('zadd', KEYS[5], delayq_ms(now), value)
    out[#out + 1] = id
    out[#out + 1] = value
    out[#out + 1] = attempt
end
return out
