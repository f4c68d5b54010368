-- delayq: take values into the in-flight set (reliable consumer).
-- Not in Redisson. The pop and the registration happen in one script, so a value is always on a
-- list (the target, or this consumer's claim list) or in flight with a deadline, whatever happens
-- to the taking process. The claim list is where this consumer's blocking wait
-- (BLMOVE NAME claim) put a value; it is emptied first. The consumer's lease on its claim list is
-- renewed on every call; a reaper gives back the claim lists of consumers whose lease ran out.
-- While delayq's pause flag exists nothing is taken: a value the blocking wait claimed goes back
-- onto the head of the target list, where it was.
--
-- Helpers: time, guard
-- KEYS[1]: target list        NAME
-- KEYS[2]: pause flag         delayq_paused:{NAME} (any type: only whether it exists counts)
-- KEYS[3]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[4]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[5]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[6]: counters touched   delayq_attempts_seen:{NAME}  value bytes -> last touch ms
-- KEYS[7]: claim leases       delayq_claims:{NAME}         claim list -> lease deadline ms
-- KEYS[8]: claim list         delayq_claim:{NAME}:CONSUMER
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: visibility timeout, ms
-- ARGV[4]: claim lease, ms
-- ARGV[5..]: fresh delivery ids' first parts, one per value wanted: a delivery's id is its part
--             followed by the attempt counted here (PROCESS.STARTED_MS.RANDOM.ATTEMPT, see
--             src/reliable/delivery_id.rs)
-- Returns: { deadline ms, 1 when the queue is paused (nothing taken) else 0, id1, value1,
-- attempt1, id2, value2, attempt2, ... }
local now = delayq_now(ARGV[1])
local deadline = now + tonumber(ARGV[3])
redis.call('zadd', KEYS[7], delayq_ms(now + tonumber(ARGV[4])), KEYS[8])
if redis.call('exists', KEYS[2]) == 1 then
    while redis.call('lmove', KEYS[8], KEYS[1], 'right', 'left') do
    end
    return { deadline, 1 }
end
local out = { deadline, 0 }
for i = 5, #ARGV do
    local value = redis.call('lpop', KEYS[8])
    if not value then
        value = redis.call('lpop', KEYS[1])
    end
    if not value then
        break
    end
    local attempt = redis.call('hincrby', KEYS[5], value, 1)
    local id = ARGV[i] .. attempt
    redis.call('zadd', KEYS[3], delayq_ms(deadline), id)
    redis.call('hset', KEYS[4], id, value)
    redis.call('zadd', KEYS[6], delayq_ms(now), value)
    out[#out + 1] = id
    out[#out + 1] = value
    out[#out + 1] = attempt
end
return out
