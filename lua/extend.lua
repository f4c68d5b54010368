-- delayq: push an in-flight value's visibility deadline back (heartbeat of a long job).
--
-- KEYS[1]: in-flight zset     delayq_inflight:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: new visibility timeout from now, ms
-- ARGV[3]: delivery id
-- Returns: the new deadline in ms, or false when the delivery is no longer in flight (a reaper
-- has already given the value back: another consumer may be working on it).
if not redis.call('zscore', KEYS[1], ARGV[3]) then
    return false
end
local deadline = delayq_now(ARGV[1]) + tonumber(ARGV[2])
redis.call('zadd', KEYS[1], 'xx', delayq_ms(deadline), ARGV[3])
return deadline
