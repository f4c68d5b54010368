-- delayq: which of the given values are pending.
-- Mirrors: Redisson RedissonDelayedQueue#contains / containsAll (3.x/4.x): a value is pending when
-- an order-list entry carries it. Instead of walking the order list, the entries carrying a value
-- are looked up in the value index (lib/values_record.lua), which the call first brings up to date.
--
-- Helpers: time, guard, entry, queue, position, values_field, values_record, values_sync,
--          values_lookup, values_step
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: value index        delayq_values:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: most order-list entries to add to the value index in this call
-- ARGV[4]: most order-list elements the index does not cover that the call may read instead of
--          indexing them first (when no more are left after indexing, the lookup follows in this
--          call)
-- ARGV[5..]: codec-encoded values (distinct)
-- Returns: { 0, order-list elements the value index does not cover yet } when it is not
--          ready (nothing was looked up: call again), or
--          { 1, how many of ARGV[4..] are pending }.
local vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[5], ARGV[2] == '1')
local values = { unpack(ARGV, 5) }
if not delayq_values_ready(vx, tonumber(ARGV[3]), tonumber(ARGV[4]), 'value', values) then
    return delayq_values_not_ready(vx)
end
local found = 0
for _, value in ipairs(values) do
    local candidates = delayq_values_by_value(vx, value)
    if #candidates > 0 then
        for _, alive in ipairs(delayq_values_alive(vx, candidates)) do
            if alive then
                found = found + 1
                break
            end
        end
    end
end
delayq_values_commit(vx)
return { 1, found }
