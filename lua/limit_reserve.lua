-- delayq: reserve a slot and a token of a sharded queue's own limits, before a worker takes.
-- Not in Redisson. A sharded queue's limits are those of its logical name (delayq_limits:{NAME}),
-- whose slot holds none of the shards' values: so the slot and the token are taken here, under a
-- reservation id, before the take from a shard; the job renews and releases the reservation like
-- any delivery's slots (limit_lease.lua). Queue-wide limits only: per-key limits stay per shard.
--
-- Helpers: time, guard, limit
-- KEYS[1]: target list        NAME (untouched: routes the call to the logical queue's slot)
-- KEYS[2]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[3]: queue-wide slots   delayq_limit_slots:{NAME}    reservation id -> lease end ms
-- KEYS[4]: rate state         delayq_limit_tat:{NAME}      'q' -> arrival time ms
-- KEYS[5]: keys busy          delayq_limit_busy:{NAME}     (untouched: no key here)
-- KEYS[6]: the key's slots    delayq_limit_key:{NAME}:KEY  (untouched: no key here)
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: version of the limits the worker goes by (their numbers are read from KEYS[2])
-- ARGV[4]: lease, ms (the visibility timeout)
-- ARGV[5]: reservation id
-- Returns: { 1, granted ms } reserved; { 0, wait ms, 'slot' or 'token' } refused; { 3 } the
-- limits changed (read them again); { 8, field } a stored field is malformed (nothing changed).
local spec, stop = delayq_limit_spec(KEYS[2], ARGV[3])
if not spec then
    return stop
end
-- Per-key limits stay each shard's own.
spec.key_cap, spec.key_count, spec.key_period = 0, 0, 0
local now = delayq_server_us() / 1000
local wait, why = delayq_limit_queue_wait(KEYS[3], KEYS[4], now, spec)
if wait > 0 then
    return { 0, delayq_ms(math.ceil(wait)), why }
end
delayq_limit_grant(KEYS[3], KEYS[4], KEYS[5], KEYS[6], spec, now, ARGV[5], '', now + tonumber(ARGV[4]))
return { 1, math.floor(now) }
