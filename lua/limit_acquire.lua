-- delayq: take the slots and tokens a value just taken into flight needs, or hold it back.
-- Not in Redisson. Runs before the worker's handler. Per-key limits first: a value whose key is
-- at its cap, out of tokens, or already has values held back leaves the in-flight set (its
-- attempt given back) for the tail of its key's list, and the key is held back until the time
-- it may be tried again; so the value is always in flight or on a list. Queue-wide limits
-- next: when they refuse, nothing changes and the worker holds the value until the time named.
--
-- Helpers: time, guard, limit
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[5]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[6]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[7]: rate state         delayq_limit_tat:{NAME}      'q' or 'k:KEY' -> arrival time ms, 'p:KEY' paused
-- KEYS[8]: keys held back     delayq_limit_held:{NAME}     key -> when to try it ms
-- KEYS[9]: keys busy          delayq_limit_busy:{NAME}     key -> latest lease end ms
-- KEYS[10]: the key's slots   delayq_limit_key:{NAME}:KEY  delivery id -> lease end ms
-- KEYS[11]: the key's values  delayq_limit_parked:{NAME}:KEY  held back, oldest first
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: version of the limits the worker goes by (their numbers are read from KEYS[5])
-- ARGV[4]: lease, ms (the visibility timeout)
-- ARGV[5]: delivery id
-- ARGV[6]: the value's key ('' for none)
-- Returns: { 1, granted ms } started (granted: the server's TIME at which the slots and tokens
-- were granted, epoch ms); { 0, wait ms, 'slot' or 'token' } refused queue-wide; { 2, wait ms,
-- 1 when the key was not held back before } held back; { 3 } the limits changed (read them
-- again); { 4 } the delivery is no longer in flight; { 8, field } a stored field is malformed
-- (nothing changed).
local spec, stop = delayq_limit_spec(KEYS[5], ARGV[3])
if not spec then
    return stop
end
local id, key = ARGV[5], ARGV[6]
if not redis.call('zscore', KEYS[2], id) then
    return { 4 }
end
local now = delayq_server_us() / 1000
if key ~= '' and (spec.key_cap > 0 or spec.key_count > 0) then
    local wait = 0
    local held = redis.call('zscore', KEYS[8], key)
    if redis.call('llen', KEYS[11]) == 0 then
        wait = delayq_limit_key_wait(KEYS[10], KEYS[7], key, now, spec)
    else
        wait = math.max(0, (tonumber(held) or now) - now)
    end
    if wait > 0 or redis.call('llen', KEYS[11]) > 0 then
        local value = redis.call('hget', KEYS[3], id)
        redis.call('zrem', KEYS[2], id)
        redis.call('hdel', KEYS[3], id)
        if value then
            if redis.call('hincrby', KEYS[4], value, -1) <= 0 then
                redis.call('hdel', KEYS[4], value)
            end
            redis.call('rpush', KEYS[11], value)
        end
        if not held or tonumber(held) > now + wait then
            redis.call('zadd', KEYS[8], delayq_ms(math.ceil(now + wait)), key)
        end
        return { 2, delayq_ms(math.ceil(wait)), held and 0 or 1 }
    end
end
local wait, why = delayq_limit_queue_wait(KEYS[6], KEYS[7], now, spec)
if wait > 0 then
    return { 0, delayq_ms(math.ceil(wait)), why }
end
delayq_limit_grant(KEYS[6], KEYS[7], KEYS[9], KEYS[10], spec, now, id, key, now + tonumber(ARGV[4]))
return { 1, math.floor(now) }
