-- delayq: take a value into flight with the slot and token the queue-wide limits want, or none.
-- Not in Redisson. take.lua under limits without per-key ones: when the queue is at its cap or
-- out of tokens, nothing is taken (the worker waits the time named, holding no value); else
-- one value is taken (the claim list first) and its slot and token are taken with it.
--
-- Helpers: time, guard, limit
-- KEYS[1]: target list        NAME
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}       delivery id -> deadline ms
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}  delivery id -> value bytes
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}       value bytes -> deliveries so far
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}  value bytes -> last touch ms
-- KEYS[6]: claim leases       delayq_claims:{NAME}         claim list -> lease deadline ms
-- KEYS[7]: claim list         delayq_claim:{NAME}:CONSUMER
-- KEYS[8]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[9]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[10]: rate state        delayq_limit_tat:{NAME}      'q' or 'k:KEY' -> arrival time ms
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: visibility timeout (and slot lease), ms
-- ARGV[4]: claim lease, ms
-- ARGV[5]: version of the limits the worker goes by
-- ARGV[6]: fresh delivery id
-- ARGV[7..12]: cap, rate count, rate period ms, key cap, key rate count, key rate period ms
-- (0: none; the key limits are not used)
-- Returns: { 1, deadline ms, id, value, attempt, granted ms } taken (granted: the server's TIME
-- at which the slot and token were granted, epoch ms); { 0, wait ms, 'slot' or 'token' }
-- refused; { 3 } the limits changed (read them again); { 6 } nothing to take.
if not delayq_limit_fresh(KEYS[8], ARGV[5]) then
    return { 3 }
end
local spec = delayq_limit_spec(7)
local server_now = delayq_server_us() / 1000
local now = delayq_now(ARGV[1])
redis.call('zadd', KEYS[6], delayq_ms(now + tonumber(ARGV[4])), KEYS[7])
local wait, why = delayq_limit_queue_wait(KEYS[9], KEYS[10], server_now, spec)
if wait > 0 then
    return { 0, delayq_ms(math.ceil(wait)), why }
end
local value = redis.call('lpop', KEYS[7])
if not value then
    value = redis.call('lpop', KEYS[1])
end
if not value then
    return { 6 }
end
local id = ARGV[6]
local deadline = now + tonumber(ARGV[3])
redis.call('zadd', KEYS[2], delayq_ms(deadline), id)
redis.call('hset', KEYS[3], id, value)
local attempt = redis.call('hincrby', KEYS[4], value, 1)
redis.call('zadd', KEYS[5], delayq_ms(now), value)
delayq_limit_grant(KEYS[9], KEYS[10], nil, nil, spec, server_now, id, '', server_now + tonumber(ARGV[3]))
return { 1, deadline, id, value, attempt, math.floor(server_now) }
