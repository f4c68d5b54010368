-- delayq: give pending entries a new due time, atomically: every entry carrying a value, or the
-- entry with an id (the handle an offer returned). Not in Redisson. The entries keep their bytes
-- and their place in the order list (a Java peer sees the same entries with a new score); an entry
-- already transferred is not pending, so it is not touched. The entries are found in the value
-- index (lib/values_record.lua), not by walking the order list.
--
-- Helpers: time, guard, entry, queue, position, values_field, values_record, values_sync,
--          values_lookup, values_step
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: value index        delayq_values:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: new delay from now, ms
-- ARGV[4]: 'value' or 'id': what ARGV[5] is
-- ARGV[5]: the codec-encoded value, or an entry's id (its first 9 bytes)
-- ARGV[6]: most order-list entries to add to the value index in this call
-- ARGV[7]: most order-list elements the index does not cover that the call may read instead of
--          indexing them first (when no more are left after indexing, the lookup follows in this
--          call)
-- Returns: { 0, order-list elements the value index does not cover yet } when it is not
--          ready (nothing was changed: call again), or
--          { 1, the number of entries rescheduled (0: none is pending) }.
local due = delayq_ms(delayq_now(ARGV[1]) + tonumber(ARGV[3]))
local vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[5], ARGV[2] == '1')
if not delayq_values_ready(vx, tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[4], { ARGV[5] }) then
    return delayq_values_not_ready(vx)
end
local candidates
if ARGV[4] == 'id' then
    candidates = delayq_values_by_id(vx, ARGV[5])
else
    candidates = delayq_values_by_value(vx, ARGV[5])
end
local alive = delayq_values_alive(vx, candidates)
local changed, moved = 0, {}
for i, tuple in ipairs(candidates) do
    -- Identical copies share one zset member: it moves once.
    if alive[i] and not moved[tuple.entry] then
        moved[tuple.entry] = true
        -- Only an entry with a zset member is pending (Java's retainAll leaves list-only ones).
        if redis.call('zscore', KEYS[2], tuple.entry) then
            redis.call('zadd', KEYS[2], due, tuple.entry)
            changed = changed + 1
        end
    elseif not alive[i] then
        delayq_values_drop(vx, tuple)
    end
end
if changed > 0 then
    local head = redis.call('zrange', KEYS[2], 0, 0)[1]
    if head and moved[head] then
        redis.call('publish', KEYS[4], due)
    end
end
delayq_values_commit(vx)
return { 1, changed }
