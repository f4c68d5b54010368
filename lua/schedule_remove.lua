-- delayq: remove one recurring schedule (entries it already offered stay pending).
-- Not in Redisson.
--
-- Helpers: guard
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: schedules          delayq_schedules:{NAME}
-- KEYS[3]: schedule           delayq_schedule:{NAME}:ID
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: the schedule's id (its member in KEYS[2])
-- Returns: 1 when the schedule existed, else 0.
local existed = redis.call('zrem', KEYS[2], ARGV[3])
return math.max(existed, redis.call('del', KEYS[3]))
