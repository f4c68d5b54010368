-- delayq: one consistent snapshot of a queue's counters.
-- Not in Redisson.
--
-- Helpers: guard
-- KEYS[1]: target list        NAME
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: quarantine         delayq_quarantine:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- Returns: { order list length, zset size, target list length, quarantine length }; the head's
-- score is read by the caller with a ZRANGE of its own, as copying the head entry into the
-- script (a whole 16 MiB entry for a 16 MiB value) holds Redis several times longer.
return {
    redis.call('llen', KEYS[3]),
    redis.call('zcard', KEYS[2]),
    redis.call('llen', KEYS[1]),
    redis.call('llen', KEYS[5]),
}
