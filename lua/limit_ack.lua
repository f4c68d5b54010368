-- delayq: acknowledge an in-flight value and release the slots its job held under the limits.
-- Not in Redisson. ack.lua and limit_lease.lua's release in one call: a limited job ends with
-- one round trip, as an unlimited one does. The slots are released even when the delivery is
-- no longer in flight (they are the job's, and the job has ended).
--
-- Helpers: time, guard, settle, limit
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[6]: settled recently   delayq_settled:{NAME}
-- KEYS[7]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[8]: keys held back     delayq_limit_held:{NAME}     key -> when to try it ms
-- KEYS[9]: keys busy          delayq_limit_busy:{NAME}     key -> latest lease end ms
-- KEYS[10]: the key's slots   delayq_limit_key:{NAME}:KEY  delivery id -> lease end ms
-- KEYS[11]: the key's values  delayq_limit_parked:{NAME}:KEY  held back, oldest first
-- ARGV[1]: now (not used; settling is noted by the server's clock)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: delivery id
-- ARGV[4]: the value's key under the limits ('' for none)
-- Returns: as ack.lua.
local reply = delayq_ack(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[3])
delayq_limit_release(KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], ARGV[3], ARGV[4],
    delayq_server_us() / 1000)
return reply
