-- delayq: renew or release the slots a job holds under a queue's limits.
-- Not in Redisson. Renewing pushes the job's leases back (with its heartbeats); releasing drops
-- them when the job settles, and makes the key due again when it has values held back, so a
-- worker of any process takes its next value without waiting for the time it was scored with.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[3]: keys held back     delayq_limit_held:{NAME}     key -> when to try it ms
-- KEYS[4]: keys busy          delayq_limit_busy:{NAME}     key -> latest lease end ms
-- KEYS[5]: the key's slots    delayq_limit_key:{NAME}:KEY  delivery id -> lease end ms
-- KEYS[6]: the key's values   delayq_limit_parked:{NAME}:KEY  held back, oldest first
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: 'renew' or 'release'
-- ARGV[4]: delivery id
-- ARGV[5]: the value's key ('' for none)
-- ARGV[6]: lease, ms (renew)
-- Returns: 1 when the delivery held a queue-wide or key slot, else 0.
local id, key = ARGV[4], ARGV[5]
local now = delayq_server_us() / 1000
local held = 0
if ARGV[3] == 'renew' then
    local lease_end = delayq_ms(math.floor(now) + tonumber(ARGV[6]))
    if redis.call('zscore', KEYS[2], id) then
        redis.call('zadd', KEYS[2], lease_end, id)
        held = 1
    end
    if key ~= '' and redis.call('zscore', KEYS[5], id) then
        redis.call('zadd', KEYS[5], lease_end, id)
        redis.call('zadd', KEYS[4], lease_end, key)
        held = 1
    end
    return held
end
held = redis.call('zrem', KEYS[2], id)
if key ~= '' then
    held = math.max(held, redis.call('zrem', KEYS[5], id))
    if redis.call('llen', KEYS[6]) > 0 then
        local score = tonumber(redis.call('zscore', KEYS[3], key))
        if not score or score > now then
            redis.call('zadd', KEYS[3], delayq_ms(math.floor(now)), key)
        end
    end
    if redis.call('zcard', KEYS[5]) == 0 then
        redis.call('zrem', KEYS[4], key)
    end
end
return held
