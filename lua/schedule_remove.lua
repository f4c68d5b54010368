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
-- ARGV[4]: '1' to remove only a member whose hash is gone (a ghost), '0' to remove the schedule
-- Returns: 1 when the schedule existed (ARGV[4] '1': when a ghost member was removed), else 0.
if ARGV[4] == '1' then
  if redis.call('exists', KEYS[3]) == 1 then
    return 0
  end
  return redis.call('zrem', KEYS[2], ARGV[3])
end
local existed = redis.call('zrem', KEYS[2], ARGV[3])
return math.max(existed, redis.call('del', KEYS[3]))
