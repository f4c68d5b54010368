-- delayq: one consistent snapshot of the reliable consumer's keys.
--
-- KEYS[1]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[2]: dead letters       delayq_dead:{NAME}
-- KEYS[3]: attempt counters   delayq_attempts:{NAME}
-- KEYS[4]: quarantine         delayq_quarantine:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- Returns: { in flight, of which overdue, dead letters, attempt counters, quarantined,
--            earliest deadline as a string or false }
local now = delayq_now(ARGV[1])
local head = redis.call('zrange', KEYS[1], 0, 0, 'withscores')
return {
    redis.call('zcard', KEYS[1]),
    redis.call('zcount', KEYS[1], '-inf', delayq_ms(now)),
    redis.call('llen', KEYS[2]),
    redis.call('hlen', KEYS[3]),
    redis.call('llen', KEYS[4]),
    head[2] or false,
}
