-- delayq: bring the value index (lib/values_record.lua) up to date ahead of lookups, a slice of the
-- order list a call (the scheduler's share; a lookup that finds it behind indexes a bounded
-- share itself, then reads the rest). Not in Redisson. An index that does not exist is not
-- started: only queues whose values were looked up have one.
--
-- Helpers: time, guard, entry, queue, position, values_field, values_record, values_sync,
--          values_step
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: value index        delayq_values:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: most order-list entries to add to the value index in this call
-- Returns: 1 when the value index covers the whole order list (or does not exist), else 0.
if redis.call('exists', KEYS[4]) == 0 then
    return 1
end
local vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[4], ARGV[2] == '1')
local complete = delayq_values_sync(vx, tonumber(ARGV[3]))
delayq_values_commit(vx)
if complete then
    return 1
end
return 0
