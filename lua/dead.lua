-- delayq: move an in-flight value to the dead-letter list.
-- Not in Redisson.
--
-- Helpers: time, guard, settle
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[3]: in-flight data     delayq_inflight_data:{NAME}
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}
-- KEYS[5]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[6]: settled recently   delayq_settled:{NAME}
-- KEYS[7]: dead letters       delayq_dead:{NAME}
-- ARGV[1]: now (not used; settling is noted by the server's clock)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: delivery id
-- ARGV[4]: the record's header, built by the client (src/reliable/dead.rs); the value bytes
--          are appended to it here
-- ARGV[5]: most dead letters kept (the oldest are trimmed), 0 for no limit
-- Returns: { 1 (also when this delivery was settled in the last minute: a retried call), or 0
-- when the delivery is no longer in flight; how many of the oldest dead letters were trimmed
-- to keep the limit }.
local value, reply = delayq_leave_flight(KEYS[2], KEYS[3], KEYS[6], ARGV[3])
if reply then
    -- A retried call whose first run (on a connection that dropped) settled the delivery:
    -- noting it again is a write on this connection, so that a WAIT after it covers the first
    -- run's dead letter (on servers where WAIT counts from a connection's last write, not its
    -- last command: Redis 7.2+, Valkey).
    if reply == 1 then
        delayq_remember_settled(KEYS[6], ARGV[3])
    end
    return { reply, 0 }
end
if not value then
    return { 0, 0 }
end
redis.call('hdel', KEYS[4], value)
redis.call('zrem', KEYS[5], value)
local length = redis.call('rpush', KEYS[7], ARGV[4] .. value)
local keep = tonumber(ARGV[5])
local trimmed = 0
if keep > 0 and length > keep then
    redis.call('ltrim', KEYS[7], -keep, -1)
    trimmed = length - keep
end
delayq_remember_settled(KEYS[6], ARGV[3])
return { 1, trimmed }
