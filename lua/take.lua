-- delayq: take values into the in-flight set (reliable consumer).
-- Not in Redisson. The pop and the registration happen in one script, so a value is always on a
-- list (the target, or this consumer's claim list) or in flight with a deadline, whatever happens
-- to the taking process. The claim list is where this consumer's blocking wait
-- (BLMOVE NAME claim) put a value; it is emptied first. The consumer's lease on its claim list is
-- renewed on every call; a reaper gives back the claim lists of consumers whose lease ran out.
--
-- Helpers: time, guard
-- KEYS[1]: target list        NAME
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}  value bytes -> last touch ms
-- KEYS[6]: claim leases       delayq_claims:{NAME}         claim list -> lease deadline ms
-- KEYS[7]: claim list         delayq_claim:{NAME}:CONSUMER
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: visibility timeout, ms
-- ARGV[4]: claim lease, ms
-- ARGV[5..]: fresh delivery ids, one per value wanted
-- Returns: { deadline ms, id1, value1, attempt1, id2, value2, attempt2, ... }
local now = delayq_now(ARGV[1])
local deadline = now + tonumber(ARGV[3])
redis.call('zadd', KEYS[6], delayq_ms(now + tonumber(ARGV[4])), KEYS[7])
local out = { deadline }
for i = 5, #ARGV do
    local value = redis.call('lpop', KEYS[7])
    if not value then
        value = redis.call('lpop', KEYS[1])
    end
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
