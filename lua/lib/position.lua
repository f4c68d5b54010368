-- delayq lib/position.lua: where entries sit in a list, without one LREM scan per entry.
--
-- The position index (delayq_index:{NAME}, a zset: an entry's first 9 bytes -> a sequence)
-- covers a prefix of the order list: member i (by score) is the entry at position i. delayq's
-- scripts keep it so (an entry that leaves the list leaves the index: delayq_position_forget); a
-- Java peer's poll/remove/transfer does not, but neither Redisson nor delayq ever inserts into
-- the order list other than at its tail (RPUSH), so any change to the covered prefix removes
-- entries from it and shifts its last entry: delayq_position_sync checks that entry and
-- rebuilds a stale index from the head, a chunk per call. Members are unique (the first 9 bytes
-- hold the entry's random id), so a checked index places entries without reading the list; only
-- when identical entries were indexed in one call must each position be checked with LINDEX.
--
-- delayq_window_positions(window): for the elements read from the head of a list (LRANGE 0 ..),
--   a table element -> its positions (0-based), first occurrence last, so that table.remove
--   gives the first one not yet taken (used for the transfer's head window and the dead-letter
--   replay's window).
-- delayq_position_sync(order, index, length, chunk, until_us): brings the index up to date,
--   adding at most chunk entries and stopping once delayq_clock_us() reaches until_us; returns
--   whether its positions can be trusted without reading the list (false when a member was
--   added twice in this call: identical entries, which shift later ranks) and how many entries
--   it covers.
-- delayq_position_forget(index, entry): the entry's member leaves the index (the entry left the
--   order list).
local DELAYQ_POSITION_SLICE = 1000 -- entries indexed between two looks at the clock
local DELAYQ_POSITION_ARGS = 500 -- arguments per variadic call, well under Lua's stack limit

local function delayq_window_positions(window)
    local positions = {}
    for i = #window, 1, -1 do
        local list = positions[window[i]]
        if list then
            list[#list + 1] = i - 1
        else
            positions[window[i]] = { i - 1 }
        end
    end
    return positions
end

local function delayq_position_sync(order, index, length, chunk, until_us)
    local covered = redis.call('zcard', index)
    local next_seq = 0
    if covered > 0 then
        local last = redis.call('zrange', index, -1, -1, 'withscores')
        local at = redis.call('lindex', order, covered - 1)
        if covered > length or not at or delayq_index_member(at) ~= last[1] then
            -- Someone else removed entries inside the covered prefix: start again from the head.
            redis.call('unlink', index)
            covered = 0
        else
            next_seq = tonumber(last[2]) + 1
        end
    end
    local added_here = 0
    while covered < length and added_here < chunk do
        local take = math.min(DELAYQ_POSITION_SLICE, chunk - added_here)
        local fresh = redis.call('lrange', order, covered, covered + take - 1)
        local args = {}
        for i, entry in ipairs(fresh) do
            args[#args + 1] = next_seq + i - 1
            args[#args + 1] = delayq_index_member(entry)
        end
        local added = 0
        local step = DELAYQ_POSITION_ARGS * 2
        for i = 1, #args, step do
            local last = math.min(i + step - 1, #args)
            added = added + redis.call('zadd', index, unpack(args, i, last))
        end
        if added ~= #fresh then
            -- Identical entries: ranks past the first copy are off by the copies; the index no
            -- longer tells positions without a look, and stops growing until rebuilt.
            return false, redis.call('zcard', index)
        end
        covered, next_seq, added_here = covered + #fresh, next_seq + #fresh, added_here + #fresh
        if delayq_clock_us() >= until_us then
            break
        end
    end
    return true, covered
end

local function delayq_position_forget(index, entry)
    redis.call('zrem', index, delayq_index_member(entry))
end
