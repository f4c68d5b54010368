-- delayq: remove pending entries by value.
-- Mirrors: Redisson RedissonDelayedQueue#remove / removeAll / retainAll (3.x/4.x): remove takes the
-- first order-list entry carrying the value (from the list and the timeout zset), removeAll every
-- entry carrying one of the values. Instead of walking the order list, the entries are found in
-- the value index (lib/values_record.lua) and each leaves the list by an LREM from the end nearer to it.
-- Unlike Java's retainAll, entries retained away also leave the timeout zset; retain still walks
-- the whole list (it concerns every entry) and drops the value index, rebuilt on its next use.
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
-- ARGV[3]: mode: 'first' (the first entry carrying ARGV[6]), 'all' (every entry carrying one of
--          ARGV[7..]), 'retain' (every entry carrying none of ARGV[7..])
-- ARGV[4]: most order-list entries to add to the value index in this call
-- ARGV[5]: most order-list elements the index does not cover that the call may read instead of
--          indexing them first (when no more are left after indexing, the lookup follows in this
--          call)
-- ARGV[6]: 'all': most order-list elements the removals may scan in this call (the call stops
--          after the value whose removals ran past it; at least one entry leaves per call)
-- ARGV[7..]: codec-encoded values
-- Returns: { 0, order-list elements the value index does not cover yet } when it is not
--          ready (nothing was removed: call again), or
--          { 1, entries removed, how many of ARGV[7..] were dealt with completely }.
-- Malformed entries are never removed here.
local legacy = ARGV[2] == '1'
local mode = ARGV[3]

if mode == 'retain' then
    local wanted = {}
    for i = 7, #ARGV do
        wanted[ARGV[i]] = true
    end
    local hits = {}
    for _, entry in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do
        local value = delayq_value(entry, legacy)
        if value ~= nil and not wanted[value] then
            hits[#hits + 1] = entry
        end
    end
    for _, entry in ipairs(hits) do
        redis.call('lrem', KEYS[3], 1, entry)
        redis.call('zrem', KEYS[2], entry)
        delayq_position_forget(KEYS[5], entry)
    end
    if #hits > 0 then
        redis.call('unlink', KEYS[6])
    end
    delayq_tidy_index(KEYS[3], KEYS[5], KEYS[6])
    return { 1, #hits, #ARGV - 6 }
end

local vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[6], legacy)
local values = { unpack(ARGV, 7) }
if not delayq_values_ready(vx, tonumber(ARGV[4]), tonumber(ARGV[5]), 'value', values) then
    return delayq_values_not_ready(vx)
end
local budget = tonumber(ARGV[6])
local removed, scanned, done = 0, 0, 0
for _, value in ipairs(values) do
    local candidates = delayq_values_by_value(vx, value)
    local alive = delayq_values_alive(vx, candidates)
    local stopped = false
    for j, tuple in ipairs(candidates) do
        if alive[j] then
            if mode == 'all' and removed > 0 and scanned >= budget then
                stopped = true
                break
            end
            local count, passed = delayq_values_remove(vx, tuple, KEYS[5])
            scanned = scanned + passed
            removed = removed + count
        end
        -- Gone, or just removed: either way the tuple goes.
        delayq_values_drop(vx, tuple)
        if mode == 'first' and removed > 0 then
            break
        end
    end
    if stopped then
        break
    end
    done = done + 1
    if mode == 'first' then
        break
    end
end
delayq_values_commit(vx)
delayq_tidy_index(KEYS[3], KEYS[5])
return { 1, removed, done }
