-- delayq: take values into flight, each with the slot and token the queue-wide limits want.
-- Not in Redisson. take.lua under limits without per-key ones: values are taken (the claim list
-- first) one per delivery id given, while the limits let one more start, each with its slot and
-- token; once the queue is at its cap or out of tokens, nothing more is taken (the worker waits
-- the time named, holding no value for it). While delayq's pause flag exists nothing is taken
-- (as take.lua).
--
-- Helpers: time, guard, limit
-- KEYS[1]: target list        NAME
-- KEYS[2]: pause flag         delayq_paused:{NAME} (any type: only whether it exists counts)
-- KEYS[3]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[4]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[5]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[6]: counters touched   delayq_attempts_seen:{NAME}  value bytes -> last touch ms
-- KEYS[7]: claim leases       delayq_claims:{NAME}         claim list -> lease deadline ms
-- KEYS[8]: claim list         delayq_claim:{NAME}:CONSUMER
-- KEYS[9]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[10]: queue-wide slots  delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[11]: rate state        delayq_limit_tat:{NAME}      'q' or 'k:KEY' -> arrival time ms, 'p:KEY' paused
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: visibility timeout (and slot lease), ms
-- ARGV[4]: claim lease, ms
-- ARGV[5]: version of the limits the worker goes by (their numbers are read from KEYS[9])
-- ARGV[6..]: fresh delivery ids' first parts, one per value wanted (the worker's free permits):
--             a delivery's id is its part followed by the attempt counted here
-- Returns: { wait ms, 'slot' or 'token' or '', deadline ms, granted ms, then per value taken:
-- id, value, attempt } (wait ms > 0 when the limits refused one more; granted: the server's
-- TIME at which the slots and tokens were granted, epoch ms); { 3 } the limits changed (read
-- them again); { 8, field } a stored field is malformed (nothing taken); { 9 } the queue is
-- paused (nothing taken; a value the blocking wait claimed went back onto the target list).
local now = delayq_now(ARGV[1])
redis.call('zadd', KEYS[7], delayq_ms(now + tonumber(ARGV[4])), KEYS[8])
if redis.call('exists', KEYS[2]) == 1 then
    while redis.call('lmove', KEYS[8], KEYS[1], 'right', 'left') do
    end
    return { 9 }
end
local spec, stop = delayq_limit_spec(KEYS[9], ARGV[5])
if not spec then
    return stop
end
local server_now = delayq_server_us() / 1000
local deadline = now + tonumber(ARGV[3])
local lease_end = server_now + tonumber(ARGV[3])
local out = { 0, '', deadline, math.floor(server_now) }
for i = 6, #ARGV do
    local wait, why = delayq_limit_queue_wait(KEYS[10], KEYS[11], server_now, spec)
    if wait > 0 then
        out[1], out[2] = delayq_ms(math.ceil(wait)), why
        break
    end
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
    delayq_limit_grant(KEYS[10], KEYS[11], nil, nil, spec, server_now, id, '', lease_end)
    out[#out + 1] = id
    out[#out + 1] = value
    out[#out + 1] = attempt
end
return out
