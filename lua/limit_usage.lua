-- delayq: what a queue's limits hold now: slots, busy keys, values held back, the next token.
-- Not in Redisson. Reads only; leases already run out are not counted.
--
-- Helpers: time, guard, item
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[3]: rate state         delayq_limit_tat:{NAME}      'q' or 'k:KEY' -> arrival time ms, 'p:KEY' paused
-- KEYS[4]: keys held back     delayq_limit_held:{NAME}     key -> when to try it ms
-- KEYS[5]: keys busy          delayq_limit_busy:{NAME}     key -> latest lease end ms
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: prefix of the lists of values held back (delayq_limit_parked:{NAME}), ':' KEY follows
-- ARGV[4]: most keys held back to count values of
-- ARGV[5]: most keys to name (those with the most values held back)
-- Returns: { now ms, slots held, keys busy, keys held back, values held back (of the keys
-- counted), queue-wide arrival time ms or false, key1, count1, key2, count2, ... }
local now = math.floor(delayq_server_us() / 1000)
local slots = redis.call('zcount', KEYS[2], '(' .. delayq_ms(now), '+inf')
local busy = redis.call('zcount', KEYS[5], '(' .. delayq_ms(now), '+inf')
local held_keys = redis.call('zcard', KEYS[4])
local keys = redis.call('zrange', KEYS[4], 0, tonumber(ARGV[4]) - 1)
local counts = {}
local total = 0
for _, key in ipairs(keys) do
    local n = redis.call('llen', delayq_item_key(ARGV[3], key))
    local legacy = delayq_item_legacy_list(ARGV[3], KEYS[4], key)
    if legacy then
        n = n + redis.call('llen', legacy)
    end
    total = total + n
    counts[#counts + 1] = { key, n }
end
table.sort(counts, function(a, b)
    if a[2] ~= b[2] then
        return a[2] > b[2]
    end
    return a[1] < b[1]
end)
local tat = redis.call('zscore', KEYS[3], 'q')
local out = { now, slots, busy, held_keys, total, tat and delayq_ms(tonumber(tat)) or false }
for i = 1, math.min(#counts, tonumber(ARGV[5])) do
    out[#out + 1] = counts[i][1]
    out[#out + 1] = counts[i][2]
end
return out
