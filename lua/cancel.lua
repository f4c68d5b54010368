-- delayq: remove the pending entry with an id (the handle an offer returned), without looking
-- at its value. Not in Redisson (whose remove(o) takes the first entry carrying an equal value).
-- The entry is found in the value index (lib/values_record.lua) and leaves the order list by an LREM
-- from the end nearer to it, and the timeout zset by ZREM.
--
-- Helpers: time, guard, entry, queue, position, values_field, values_record, values_sync,
--          values_lookup, values_step
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME} (kept in step; see lib/position.lua)
-- KEYS[6]: value index        delayq_values:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: the entry's id (its first 9 bytes)
-- ARGV[4]: most order-list entries to add to the value index in this call
-- ARGV[5]: most order-list elements the index does not cover that the call may read instead of
--          indexing them first (when no more are left after indexing, the lookup follows in this
--          call)
-- Returns: { 0, order-list elements the value index does not cover yet } when it is not
--          ready (nothing was removed: call again), or
--          { 1, 1 when the entry was pending and is removed, else 0 }.
local vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[6], ARGV[2] == '1')
if not delayq_values_ready(vx, tonumber(ARGV[4]), tonumber(ARGV[5]), 'id', { ARGV[3] }) then
    return delayq_values_not_ready(vx)
end
local candidates = delayq_values_by_id(vx, ARGV[3])
local alive = delayq_values_alive(vx, candidates)
local removed = 0
for i, tuple in ipairs(candidates) do
    if alive[i] then
        removed = delayq_values_remove(vx, tuple, KEYS[5])
    end
    delayq_values_drop(vx, tuple)
    if removed > 0 then
        break
    end
end
delayq_values_commit(vx)
delayq_tidy_index(KEYS[3], KEYS[5])
return { 1, removed }
