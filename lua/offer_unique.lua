-- delayq: offer a value unless an equal one is pending, in which case that entry gets the new
-- due time instead (and any further equal entries are removed), atomically. Not in Redisson.
-- The equal entries are found in the value index (lib/values_record.lua), not by walking the order
-- list; a further equal entry leaves the list by an LREM from the end nearer to it.
--
-- Helpers: time, guard, entry, queue, position, values_field, values_record, values_sync,
--          values_lookup, values_step
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME} (kept in step; see lib/position.lua)
-- KEYS[6]: value index        delayq_values:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: delay from now, ms
-- ARGV[4]: random entry id
-- ARGV[5]: the codec-encoded value
-- ARGV[6]: most order-list entries to add to the value index in this call
-- ARGV[7]: most order-list elements the index does not cover that the call may read instead of
--          indexing them first (when no more are left after indexing, the lookup follows in this
--          call)
-- Returns: { 0, order-list elements the value index does not cover yet } when it is not
--          ready (nothing was offered: call again), or
--          { 1, the number of pending entries that were equal (0: a new entry was offered) }.
local due = delayq_ms(delayq_now(ARGV[1]) + tonumber(ARGV[3]))
local legacy = ARGV[2] == '1'
local vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[6], legacy)
if not delayq_values_ready(vx, tonumber(ARGV[6]), tonumber(ARGV[7]), 'value', { ARGV[5] }) then
    return delayq_values_not_ready(vx)
end
local candidates = delayq_values_by_value(vx, ARGV[5])
local alive = delayq_values_alive(vx, candidates)
-- The first equal entry keeps its place with the new due time, the others leave.
local kept, found = nil, 0
for i, tuple in ipairs(candidates) do
    if alive[i] and not kept then
        kept = tuple
        found = 1
    else
        if alive[i] then
            found = found + delayq_values_remove(vx, tuple, KEYS[5])
        end
        delayq_values_drop(vx, tuple)
    end
end
if kept then
    redis.call('zadd', KEYS[2], due, kept.entry)
    delayq_publish_if_head(KEYS[2], KEYS[4], kept.entry, due)
else
    local entry = delayq_pack(legacy, ARGV[4], ARGV[5])
    delayq_schedule(KEYS[2], KEYS[3], KEYS[4], due, entry)
    delayq_values_add(vx, entry)
end
delayq_values_commit(vx)
delayq_tidy_index(KEYS[3], KEYS[5])
return { 1, found }
