-- delayq: take the oldest value of a key held back whose time has come, with its slots and tokens.
-- Not in Redisson. Looks at a bounded number of due keys, oldest score first: a key still at its
-- limits is scored again by when it may be tried; a key found empty leaves the zset. The value
-- taken goes into flight as a take would put it (attempt counted), and its key, if it has more
-- values, is scored 'now', behind the keys that waited longer. While delayq's pause flag exists
-- nothing is taken.
--
-- Helpers: time, guard, item, limit
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: pause flag         delayq_paused:{NAME} (any type: only whether it exists counts)
-- KEYS[3]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[4]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[5]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[6]: counters touched   delayq_attempts_seen:{NAME}  value bytes -> last touch ms
-- KEYS[7]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[8]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[9]: rate state         delayq_limit_tat:{NAME}      'q' or 'k:KEY' -> arrival time ms, 'p:KEY' paused
-- KEYS[10]: keys held back    delayq_limit_held:{NAME}     key -> when to try it ms
-- KEYS[11]: keys busy         delayq_limit_busy:{NAME}     key -> latest lease end ms
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: version of the limits the worker goes by (their numbers are read from KEYS[7])
-- ARGV[4]: lease, ms (the visibility timeout)
-- ARGV[5]: first part of the delivery id for the value taken (the attempt counted here follows)
-- ARGV[6]: prefix of the keys' lists (delayq_limit_parked:{NAME}), ':' KEY follows
-- ARGV[7]: prefix of the keys' slots (delayq_limit_key:{NAME}), ':' KEY follows
-- ARGV[8]: most due keys to look at
-- (Positional: six arguments of the script's own, each named here; a packed table would cost
-- a decode per call and name nothing this header does not.)
-- Returns: { 1, deadline ms, granted ms, key, id, value, attempt } taken (granted: the server's
-- TIME at which the slots and tokens were granted, epoch ms; id, value, attempt as take.lua
-- gives them); { 0, wait ms, 'slot' or 'token' } refused queue-wide; { 5, ms until the next key
-- is due, or false for none held } nothing due; { 3 } the limits changed (read them again);
-- { 8, field } a stored field is malformed (nothing taken); { 9 } the queue is paused (nothing
-- taken).
if redis.call('exists', KEYS[2]) == 1 then
    return { 9 }
end
local spec, stop = delayq_limit_spec(KEYS[7], ARGV[3])
if not spec then
    return stop
end
local now = delayq_server_us() / 1000
local due = redis.call('zrangebyscore', KEYS[10], '-inf', delayq_ms(math.floor(now)), 'limit', 0,
    tonumber(ARGV[8]))
if #due == 0 then
    local first = redis.call('zrange', KEYS[10], 0, 0, 'withscores')
    if not first[2] then
        return { 5, false }
    end
    return { 5, delayq_ms(math.max(1, math.ceil(tonumber(first[2]) - now))) }
end
local wait, why = delayq_limit_queue_wait(KEYS[8], KEYS[9], now, spec)
if wait > 0 then
    return { 0, delayq_ms(math.ceil(wait)), why }
end
for _, key in ipairs(due) do
    local list = delayq_item_list(ARGV[6], KEYS[10], key)
    local key_slots = delayq_item_key(ARGV[7], key)
    local key_wait = delayq_limit_key_wait(key_slots, KEYS[9], key, now, spec)
    if redis.call('llen', list) == 0 then
        redis.call('zrem', KEYS[10], key)
    elseif key_wait > 0 then
        redis.call('zadd', KEYS[10], delayq_ms(math.ceil(now + key_wait)), key)
    else
        local value = redis.call('lpop', list)
        if redis.call('llen', list) == 0 then
            redis.call('zrem', KEYS[10], key)
        else
            redis.call('zadd', KEYS[10], delayq_ms(math.floor(now)), key)
        end
        local attempt = redis.call('hincrby', KEYS[5], value, 1)
        local id = ARGV[5] .. attempt
        local deadline = math.floor(now) + tonumber(ARGV[4])
        redis.call('zadd', KEYS[3], delayq_ms(deadline), id)
        redis.call('hset', KEYS[4], id, value)
        redis.call('zadd', KEYS[6], delayq_ms(math.floor(now)), value)
        delayq_limit_grant(KEYS[8], KEYS[9], KEYS[11], key_slots, spec, now, id, key, deadline)
        return { 1, deadline, math.floor(now), key, id, value, attempt }
    end
end
return { 5, 0 }
