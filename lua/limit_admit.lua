-- delayq: settle a batch of values just taken into flight under per-key limits, in take order.
-- Not in Redisson. Each value, in the order taken: when its key is at its cap, out of tokens,
-- or already has values held back, it is held back (as limit_acquire.lua does: out of flight,
-- its attempt given back, to the tail of its key's list); else, while the worker has permits
-- left and the queue-wide limits allow, it starts (its slots and tokens granted); else it is
-- given back: out of flight, its attempt given back, to the head of the target list, the batch's
-- given-back values in their take order. So every value is in flight or on a list, and a key's
-- values keep their order: once a value of a key is given back, its key's later values in the
-- batch find the key as free and are given back behind it.
--
-- Helpers: time, guard, item, limit
-- KEYS[1]: target list        NAME
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[5]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[6]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[7]: rate state         delayq_limit_tat:{NAME}      'q' or 'k:KEY' -> arrival time ms, 'p:KEY' paused
-- KEYS[8]: keys held back     delayq_limit_held:{NAME}     key -> when to try it ms
-- KEYS[9]: keys busy          delayq_limit_busy:{NAME}     key -> latest lease end ms
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: version of the limits the worker goes by (their numbers are read from KEYS[5])
-- ARGV[4]: lease, ms (the visibility timeout)
-- ARGV[5]: prefix of the keys' lists (delayq_limit_parked:{NAME}), ':' KEY follows
-- ARGV[6]: prefix of the keys' slots (delayq_limit_key:{NAME}), ':' KEY follows
-- ARGV[7]: how many values may start (the worker's free permits)
-- ARGV[8..]: delivery id, key ('' for none), per value in take order
-- (Positional: five arguments of the script's own and a list; a packed table would cost a
-- decode per call and name nothing this header does not.)
-- Returns: { 3 } the limits changed (read them again; nothing changed); { 8, field } a stored
-- field is malformed (nothing changed); else { wait ms, 'slot'
-- or 'token' or '', then per value: code, a, b } with code 1 started (a: granted ms, the
-- server's TIME), 2 held back (a: wait ms, b: 1 when the key was not held back before),
-- 4 no longer in flight, 7 given back; wait ms > 0 when the queue-wide limits refused one.
local function gone_from_flight(id)
    local value = redis.call('hget', KEYS[3], id)
    redis.call('zrem', KEYS[2], id)
    redis.call('hdel', KEYS[3], id)
    if value and redis.call('hincrby', KEYS[4], value, -1) <= 0 then
        redis.call('hdel', KEYS[4], value)
    end
    return value
end

local out = { 0, '' }
local function answer(code, a, b)
    out[#out + 1] = code
    out[#out + 1] = a
    out[#out + 1] = b
end

local spec, stop = delayq_limit_spec(KEYS[5], ARGV[3])
if not spec then
    return stop
end
local now = delayq_server_us() / 1000
local lease_end = now + tonumber(ARGV[4])
local permits = tonumber(ARGV[7])
local given = {}
for i = 8, #ARGV - 1, 2 do
    local id, key = ARGV[i], ARGV[i + 1]
    local list = delayq_item_list(ARGV[5], KEYS[8], key)
    local key_slots = delayq_item_key(ARGV[6], key)
    local per_key = key ~= '' and (spec.key_cap > 0 or spec.key_count > 0)
    local key_wait = 0
    if not redis.call('zscore', KEYS[2], id) then
        answer(4, 0, 0)
    else
        local held = per_key and redis.call('zscore', KEYS[8], key)
        if per_key then
            if redis.call('llen', list) == 0 then
                key_wait = delayq_limit_key_wait(key_slots, KEYS[7], key, now, spec)
            else
                key_wait = math.max(0, (tonumber(held) or now) - now)
            end
        end
        if per_key and (key_wait > 0 or redis.call('llen', list) > 0) then
            local value = gone_from_flight(id)
            if value then
                redis.call('rpush', list, value)
            end
            if not held or tonumber(held) > now + key_wait then
                redis.call('zadd', KEYS[8], delayq_ms(math.ceil(now + key_wait)), key)
            end
            answer(2, delayq_ms(math.ceil(key_wait)), held and 0 or 1)
        else
            local wait, why = 0, ''
            if permits > 0 then
                wait, why = delayq_limit_queue_wait(KEYS[6], KEYS[7], now, spec)
                if wait > 0 and out[1] == 0 then
                    out[1], out[2] = delayq_ms(math.ceil(wait)), why
                end
            end
            if permits > 0 and wait == 0 then
                permits = permits - 1
                delayq_limit_grant(KEYS[6], KEYS[7], KEYS[9], key_slots, spec, now, id, key, lease_end)
                answer(1, math.floor(now), 0)
            else
                -- No start for it now: the queue-wide limits refused one, or no permit is left.
                permits = 0
                local value = gone_from_flight(id)
                if value then
                    given[#given + 1] = value
                end
                answer(7, 0, 0)
            end
        end
    end
end
for j = #given, 1, -1 do
    redis.call('lpush', KEYS[1], given[j])
end
return out
