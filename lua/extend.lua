-- delayq: push an in-flight value's visibility deadline back (heartbeat of a long job).
-- Not in Redisson.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: in-flight zset     delayq_inflight:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: new visibility timeout from now, ms
-- ARGV[4]: delivery id
-- Returns: the new deadline in ms, or false when the delivery is no longer in flight (a reaper
-- has already given the value back: another consumer may be working on it).
if not redis.call('zscore', KEYS[2], ARGV[4]) then
    return false
end
local deadline = delayq_now(ARGV[1]) + tonumber(ARGV[3])
redis.call('zadd', KEYS[2], 'xx', delayq_ms(deadline), ARGV[4])
return deadline
