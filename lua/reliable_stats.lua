-- delayq: one consistent snapshot of the reliable consumer's keys. Not in Redisson.
--
-- Helpers: time, guard
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: quarantine         delayq_quarantine:{NAME}
-- KEYS[3]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[4]: attempt counters   delayq_attempts:{NAME}
-- KEYS[5]: dead letters       delayq_dead:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- Returns: { in flight, of which overdue, dead letters, attempt counters, quarantined,
--            earliest deadline as a string or false }
local now = delayq_now(ARGV[1])
local head = redis.call('zrange', KEYS[3], 0, 0, 'withscores')
return {
    redis.call('zcard', KEYS[3]),
    redis.call('zcount', KEYS[3], '-inf', delayq_ms(now)),
    redis.call('llen', KEYS[5]),
    redis.call('hlen', KEYS[4]),
    redis.call('llen', KEYS[2]),
    head[2] or false,
}
