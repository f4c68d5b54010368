-- delayq: one consistent snapshot of a queue's counters.
--
-- KEYS[1]: target list    NAME
-- KEYS[2]: timeout zset   redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list     redisson_delay_queue:{NAME}
-- KEYS[4]: quarantine     delayq_quarantine:{NAME}
-- Returns: { order list length, zset size, target list length, quarantine length,
--            head score as a string or false }
local head = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
return {
    redis.call('llen', KEYS[3]),
    redis.call('zcard', KEYS[2]),
    redis.call('llen', KEYS[1]),
    redis.call('llen', KEYS[4]),
    head[2] or false,
}
