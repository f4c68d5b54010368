-- delayq: renew or release the slots a job holds under a queue's limits.
-- Not in Redisson. Renewing pushes the job's leases back (with its heartbeats); releasing drops
-- them when the job settles, and makes the key due again when it has values held back, so a
-- worker of any process takes its next value without waiting for the time it was scored with.
--
-- Helpers: time, guard, limit
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
if ARGV[3] == 'renew' then
    local lease_end = math.floor(now) + tonumber(ARGV[6])
    return delayq_limit_renew(KEYS[2], KEYS[4], KEYS[5], id, key, lease_end)
end
return delayq_limit_release(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], id, key, now)
