-- delayq lib/values_step.lua: keeping the value index (lib/values_record.lua) in step with a
-- script's writes.
--
-- delayq_values_unlist(vx, tuple): LREM of its entry, from the end of the list nearer to it;
--   returns LREM's count and the elements it is expected to have scanned.
-- delayq_values_remove(vx, tuple, positions): the tuple's entry leaves the order list (as
--   delayq_values_unlist), the timeout zset and the position index (lib/position.lua); returns
--   1 when it was in the list, else 0, and the elements the LREM is expected to have scanned.
-- delayq_values_drop(vx, tuple), delayq_values_add(vx, entry): keep the index in step with a
--   removal or an entry just appended (an entry appended to a list the index does not cover
--   completely is left for a later call to index, in list order).
-- delayq_values_commit(vx): after the script's writes: notes LLEN - ZCARD, follows the list's
--   time to live.
local function delayq_values_drop(vx, tuple)
    if tuple.unindexed then
        return
    end
    local field = delayq_values_field(tuple.entry)
    local kept = {}
    for _, t in ipairs(delayq_values_tuples(redis.call('hget', vx.key, field))) do
        if t.seq ~= tuple.seq then
            kept[#kept + 1] = t
        end
    end
    delayq_values_write(vx, field, kept)
    delayq_values_forget_id(vx, tuple.entry)
    vx.count = vx.count - 1
end

-- The seq of the head of the order list (nil when it has no tuple).
local function delayq_values_head_seq(vx)
    local head = redis.call('lindex', vx.order, 0)
    if not head then
        return nil
    end
    for _, t in ipairs(delayq_values_tuples(redis.call('hget', vx.key, delayq_values_field(head)))) do
        if t.entry == head then
            return t.seq
        end
    end
    return nil
end

-- Where a tuple's entry sits, by seq: the order list's length, and whether the entry is nearer
-- the tail, with the elements a scan from that end passes (assuming removals spread evenly).
local function delayq_values_locate(vx, tuple)
    local n = redis.call('llen', vx.order)
    local first = delayq_values_head_seq(vx) or 0
    local span = vx.seq - 1 - first
    local fraction = 0
    if span > 0 then
        fraction = math.min(1, math.max(0, (tuple.seq - first) / span))
    end
    local from_tail = fraction > 0.5
    local scanned = from_tail and (1 - fraction) * n or fraction * n
    return n, from_tail, math.floor(scanned) + 1
end

local function delayq_values_unlist(vx, tuple)
    if not tuple.trusted then
        -- Identical copies: the first one leaves, as in Redisson.
        local n = redis.call('llen', vx.order)
        return redis.call('lrem', vx.order, 1, tuple.entry), n
    end
    local _, from_tail, scanned = delayq_values_locate(vx, tuple)
    return redis.call('lrem', vx.order, from_tail and -1 or 1, tuple.entry), scanned
end

local function delayq_values_remove(vx, tuple, positions)
    local count, scanned = delayq_values_unlist(vx, tuple)
    if count == 0 then
        return 0, scanned
    end
    redis.call('zrem', vx.timeout, tuple.entry)
    delayq_position_forget(positions, tuple.entry)
    return 1, scanned
end

-- Indexes an entry just appended, when the index covered the whole order list.
local function delayq_values_add(vx, entry)
    if vx.complete then
        delayq_values_index(vx, { entry })
    end
end

local function delayq_values_commit(vx)
    local n = redis.call('llen', vx.order)
    if n == 0 then
        redis.call('unlink', vx.key)
        return
    end
    redis.call('hset', vx.key, '@seq', vx.seq, '@d', n - redis.call('zcard', vx.timeout), '@n', vx.count, '@w', vx.recent,
        '@x', vx.excess)
    delayq_tidy_index(vx.order, vx.key)
end
