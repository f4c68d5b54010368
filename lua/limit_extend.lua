-- delayq: a limited job's heartbeat: push its value's visibility deadline and its slots' leases
-- back in one call.
-- Not in Redisson. extend.lua and limit_lease.lua's renewal together: the leases last the
-- visibility timeout, renewed on the job's heartbeats, so a killed process's slots free within
-- one lease. They are renewed even when the delivery is no longer in flight: the job still runs.
--
-- Helpers: time, guard, settle, limit
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[3]: queue-wide slots   delayq_limit_slots:{NAME}    delivery id -> lease end ms
-- KEYS[4]: keys busy          delayq_limit_busy:{NAME}     key -> latest lease end ms
-- KEYS[5]: the key's slots    delayq_limit_key:{NAME}:KEY  delivery id -> lease end ms
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: new visibility timeout from now (and lease), ms
-- ARGV[4]: delivery id
-- ARGV[5]: the value's key under the limits ('' for none)
-- Returns: as extend.lua.
local visibility = tonumber(ARGV[3])
local lease_end = math.floor(delayq_server_us() / 1000) + visibility
delayq_limit_renew(KEYS[3], KEYS[4], KEYS[5], ARGV[4], ARGV[5], lease_end)
return delayq_extend(KEYS[2], delayq_now(ARGV[1]), visibility, ARGV[4])
