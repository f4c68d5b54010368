-- delayq: one consistent snapshot of a queue's counters.
-- Not in Redisson.
--
-- Helpers: time, guard, head
-- KEYS[1]: target list        NAME
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: quarantine         delayq_quarantine:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- Returns: { order list length, zset size, target list length, quarantine length, the head's
--            score as a string or false }: the head entry is never read (lib/head.lua), so a
--            16 MiB one costs no more than a small one.
return {
    redis.call('llen', KEYS[3]),
    redis.call('zcard', KEYS[2]),
    redis.call('llen', KEYS[1]),
    redis.call('llen', KEYS[5]),
    delayq_lowest_score(KEYS[2]),
}
