-- delayq lib/values_sync.lua: bringing the value index (lib/values_record.lua) up to date with the
-- order list, and checking it can be trusted, before a lookup.
--
-- What keeps it true, checked on every use instead of assumed:
--   * Seq order is list order. Entries are indexed in list order, from the first one the index
--     does not know up to the tail, and the list only ever grows at its tail (every Redisson and
--     delayq operation appends with RPUSH; removals anywhere shift nothing out of order). So the
--     indexed entries still in the list are a prefix of it: the index is complete when the tail
--     entry has a tuple (one LINDEX), and otherwise the first unindexed position is found by a
--     binary search over positions (about 20 LINDEX at a million entries). One thing can pass
--     for an indexed element: an identical copy of an indexed entry appended since (a retried
--     Java offer; its change of LLEN - ZCARD below may have been made up for by the removal of a
--     list-only entry). It carries the seq of the earlier copy, so the element found last must
--     carry the seq of the last entry indexed that is still pending, and a higher one than the
--     element before it; otherwise the index is rebuilt.
--   * A trusted tuple's entry is in the order list exactly when it is a member of the timeout
--     zset: Redisson and delayq add and remove an entry in both keys in one script. The only
--     operations that do not (Redisson's retainAll trims the list alone; a Java offer retried after
--     a lost reply appends an identical entry a second time, which Redisson's own transfer later
--     removes once; a peer that RPUSHes onto the list alone) change LLEN - ZCARD; the index
--     remembers that difference. When it fell behind delayq's back, entries left the list alone
--     (they may be indexed ones): the index is rebuilt from the head. When it rose, entries were
--     appended alone, at the tail the index does not cover yet: the indexed prefix stays, and
--     the rise must be accounted for by as many irregular entries indexed at the tail; an index
--     that reaches the tail with some of it unaccounted for (an entry left the zset alone) is
--     rebuilt. An entry that was irregular when indexed (no zset member, or identical copies in
--     the list) gets untrusted tuples, checked in the list itself (LPOS) whenever a lookup
--     reaches them.
--   * Tuples of entries someone else removed (a Java transfer, poll or remove, delayq's own
--     transfer) are dropped when a lookup meets them, and by a sweep (HSCAN, a few hundred fields
--     a call) that runs while they are more than a quarter of the listed entries indexed: the
--     index knows both counts (its tuples, and the first unindexed position).
--   * A call indexes slices of entries until it has spent DELAYQ_VALUES_CALL_US of its own time
--     (or indexed the budget it was given): a long list is indexed over several calls, none of
--     which holds Redis long, and what a lookup waited for stays indexed. A lookup is sent again
--     until the index covers the list (src/redis/script.rs, run_indexed); only while others
--     append as fast as a call indexes may it read a short uncovered rest instead (LRANGE slices,
--     before any write) for the entries it is after.
--
-- delayq_values_open(timeout, order, values, legacy): the handle the value functions take.
-- delayq_values_sync(vx, budget): indexes at most budget entries (and stops after
--   DELAYQ_VALUES_CALL_US of the call's time); true when the index is complete.
-- delayq_values_ready(vx, budget, rest_max, kind, keys): indexes as delayq_values_sync does; true
--   when lookups may follow in this call: the index is complete, or the order list's elements it
--   does not cover are at most rest_max, and have just been read for the entries carrying one of
--   keys (kind 'value': codec-encoded values; 'id': ids, the first 9 bytes of an entry).
-- delayq_values_not_ready(vx): the reply of a lookup whose index was not ready: { 0, the
--   order-list elements it does not cover yet } (the caller sends the call again).
local DELAYQ_WATERMARKS = 8
local DELAYQ_SLICE = 200
local DELAYQ_VALUES_CALL_US = 3000
local DELAYQ_SWEEP_FIELDS = 400
local DELAYQ_WATERMARK_LEN = 8 + DELAYQ_ID_LEN
local DELAYQ_REST_SLICE = 1000
-- Looked-up values from which the rest is read by unpacking each entry rather than by comparing
-- each value with each entry's end.
local DELAYQ_REST_UNPACK_FROM = 4

local function delayq_values_open(timeout, order, values, legacy)
    return {
        timeout = timeout, order = order, key = values, legacy = legacy,
        seq = 0, count = 0, gc = '0', recent = '', excess = 0, complete = false, rest = nil,
    }
end

-- The seqs of the tuples of the order-list element at pos, lowest and highest (nil: it has none).
local function delayq_values_seqs_at(vx, pos)
    local entry = redis.call('lindex', vx.order, pos)
    if not entry then
        return nil
    end
    local low, high
    for _, t in ipairs(delayq_values_tuples(redis.call('hget', vx.key, delayq_values_field(entry)))) do
        if t.entry == entry then
            low = math.min(low or t.seq, t.seq)
            high = math.max(high or t.seq, t.seq)
        end
    end
    return low, high
end

-- Whether the order-list element at pos has a tuple.
local function delayq_values_indexed_at(vx, pos)
    return delayq_values_seqs_at(vx, pos) ~= nil
end

-- The seq of the last entry indexed that is still pending, from the watermarks: nil when none of
-- them is, or when the latest one not gone is untrusted (whether it is listed costs a scan).
local function delayq_values_last_pending_seq(vx)
    local marks = vx.recent
    for pos = #marks - DELAYQ_WATERMARK_LEN + 1, 1, -DELAYQ_WATERMARK_LEN do
        local seq = struct.unpack('>d', marks, pos)
        local field = 'i' .. string.sub(marks, pos + 8, pos + DELAYQ_WATERMARK_LEN - 1)
        for _, t in ipairs(delayq_values_tuples(redis.call('hget', vx.key, field))) do
            if t.seq == seq then
                if not t.trusted then
                    return nil
                end
                if redis.call('zscore', vx.timeout, t.entry) then
                    return seq
                end
            end
        end
    end
    return nil
end

-- Whether the first unindexed position found, from, can be right: the element before it must
-- carry the seq of the last entry indexed that is still pending (when the watermarks know it),
-- and a higher one than the element before that. An identical copy of an indexed entry appended
-- since looks indexed, but carries the seq of the earlier copy.
local function delayq_values_boundary_holds(vx, from)
    local expected = delayq_values_last_pending_seq(vx)
    if from == 0 then
        return expected == nil
    end
    local _, last = delayq_values_seqs_at(vx, from - 1)
    if last == nil or (expected ~= nil and last ~= expected) then
        return false
    end
    if from == 1 then
        return true
    end
    local before = delayq_values_seqs_at(vx, from - 2)
    return before ~= nil and last > before
end

-- Indexes entries, the next ones of the order list in its order.
local function delayq_values_index(vx, entries)
    local fields = {}
    for i, entry in ipairs(entries) do
        fields[i] = delayq_values_field(entry)
    end
    local stored = delayq_values_hmget(vx.key, fields)
    local scores = {}
    for i = 1, #entries, DELAYQ_ARGS_CHUNK do
        local part = redis.call('zmscore', vx.timeout, unpack(entries, i, math.min(i + DELAYQ_ARGS_CHUNK - 1, #entries)))
        for j = 1, #part do
            scores[i + j - 1] = part[j]
        end
    end
    local records, digests, digest_fields = {}, {}, {}
    for i, entry in ipairs(entries) do
        local field = fields[i]
        local tuples = records[field]
        if not tuples then
            tuples = delayq_values_tuples(stored[i] or nil)
            records[field] = tuples
        end
        -- Irregular entries (no zset member, or a second identical copy) are checked in the list
        -- whenever a lookup reaches them.
        local trusted = scores[i] ~= false
        for _, t in ipairs(tuples) do
            if t.entry == entry then
                t.trusted = false
                trusted = false
            end
        end
        if not trusted then
            -- Accounts for one list-only append behind delayq's back (see '@x').
            vx.excess = math.max(0, vx.excess - 1)
        end
        tuples[#tuples + 1] = { seq = vx.seq, trusted = trusted, entry = entry }
        if i > #entries - DELAYQ_WATERMARKS then
            vx.recent = vx.recent .. struct.pack('>d', vx.seq) .. string.sub(entry .. string.rep('\0', DELAYQ_ID_LEN), 1, DELAYQ_ID_LEN)
        end
        vx.seq = vx.seq + 1
        vx.count = vx.count + 1
        local value = delayq_value(entry, vx.legacy)
        if value and #entry >= DELAYQ_ID_LEN then
            local digest = delayq_values_digest(value)
            if not digests[digest] then
                digests[digest] = {}
                digest_fields[#digest_fields + 1] = digest
            end
            local ids = digests[digest]
            ids[#ids + 1] = string.sub(entry, 1, DELAYQ_ID_LEN)
        end
    end
    local args = {}
    for field, tuples in pairs(records) do
        args[#args + 1] = field
        args[#args + 1] = delayq_values_pack_tuples(tuples)
    end
    delayq_values_hset_all(vx.key, args)
    local known = delayq_values_hmget(vx.key, digest_fields)
    args = {}
    for i, digest in ipairs(digest_fields) do
        args[#args + 1] = digest
        args[#args + 1] = (known[i] or '') .. table.concat(digests[digest])
    end
    delayq_values_hset_all(vx.key, args)
    local keep = DELAYQ_WATERMARKS * DELAYQ_WATERMARK_LEN
    if #vx.recent > keep then
        vx.recent = string.sub(vx.recent, -keep)
    end
end

-- Visits about count fields (HSCAN); drops trusted tuples whose entry left the timeout zset.
local function delayq_values_sweep(vx, count)
    local reply = redis.call('hscan', vx.key, vx.gc, 'count', count)
    vx.gc = reply[1]
    local found = reply[2]
    local records, trusted = {}, {}
    for i = 1, #found, 2 do
        if string.sub(found[i], 1, 1) == 'i' then
            local tuples = delayq_values_tuples(found[i + 1])
            records[#records + 1] = { field = found[i], tuples = tuples }
            for _, t in ipairs(tuples) do
                if t.trusted then
                    trusted[#trusted + 1] = t.entry
                end
            end
        end
    end
    local pending = {}
    for i = 1, #trusted, DELAYQ_ARGS_CHUNK do
        local part = redis.call('zmscore', vx.timeout, unpack(trusted, i, math.min(i + DELAYQ_ARGS_CHUNK - 1, #trusted)))
        for j = 1, #part do
            if part[j] then
                pending[trusted[i + j - 1]] = true
            end
        end
    end
    for _, record in ipairs(records) do
        local kept, gone = {}, {}
        for _, t in ipairs(record.tuples) do
            if t.trusted and not pending[t.entry] then
                gone[#gone + 1] = t
            else
                kept[#kept + 1] = t
            end
        end
        if #gone > 0 then
            delayq_values_write(vx, record.field, kept)
            vx.count = vx.count - #gone
            for _, t in ipairs(gone) do
                delayq_values_forget_id(vx, t.entry)
            end
        end
    end
end

-- Where the indexed entries still listed end (the first unindexed position), or nil when the index
-- cannot be trusted and must be rebuilt.
local function delayq_values_boundary(vx, n)
    local from
    if delayq_values_indexed_at(vx, n - 1) then
        from = n
    else
        -- The indexed entries still listed are a prefix: find where it ends.
        local lo, hi = 0, n - 1
        while lo < hi do
            local mid = math.floor((lo + hi) / 2)
            if delayq_values_indexed_at(vx, mid) then
                lo = mid + 1
            else
                hi = mid
            end
        end
        from = lo
    end
    if delayq_values_boundary_holds(vx, from) then
        return from
    end
    return nil
end

local function delayq_values_reset(vx)
    redis.call('unlink', vx.key)
    vx.seq, vx.count, vx.gc, vx.recent, vx.excess = 0, 0, '0', '', 0
end

-- Where indexing resumes: the first unindexed position, or 0 after dropping an index that cannot
-- be trusted. d is LLEN - ZCARD now.
local function delayq_values_resume(vx, n, d)
    local state = redis.call('hmget', vx.key, '@seq', '@d', '@n', '@gc', '@w', '@x')
    local recorded = tonumber(state[2])
    if state[1] and state[3] and recorded and d >= recorded then
        vx.seq, vx.count = tonumber(state[1]), tonumber(state[3])
        vx.gc, vx.recent = state[4] or '0', state[5] or ''
        vx.excess = (tonumber(state[6]) or 0) + d - recorded
        local from = delayq_values_boundary(vx, n)
        -- A rise of LLEN - ZCARD with no unindexed tail to account for it: an entry left the
        -- zset alone.
        if from and not (from >= n and vx.excess > 0) then
            return from
        end
    end
    -- No index yet, entries left the list behind delayq's back, or a copy passed for an indexed
    -- entry: (re)build from the head.
    delayq_values_reset(vx)
    return 0
end

-- Indexes at most budget entries; true when the index is complete. Notes in vx how many of the
-- list's elements it covers (listed).
local function delayq_values_sync(vx, budget)
    local started = delayq_clock_us()
    local n = redis.call('llen', vx.order)
    if n == 0 then
        delayq_values_reset(vx)
        vx.listed, vx.complete = 0, true
        return true
    end
    local d = n - redis.call('zcard', vx.timeout)
    local from = delayq_values_resume(vx, n, d)
    local indexed = 0
    while from + indexed < n and indexed < budget do
        local first = from + indexed
        local last = first + math.min(DELAYQ_SLICE, budget - indexed) - 1
        local entries = redis.call('lrange', vx.order, first, last)
        delayq_values_index(vx, entries)
        indexed = indexed + #entries
        if delayq_clock_us() - started >= DELAYQ_VALUES_CALL_US then
            break
        end
    end
    local listed = from + indexed
    if listed >= n and vx.excess > 0 then
        -- The tail is indexed and a rise of LLEN - ZCARD is still unaccounted for: an entry left
        -- the zset alone. Rebuilt from the head, from the next call on.
        delayq_values_reset(vx)
        listed = 0
    end
    -- Tuples of entries gone: the index holds vx.count tuples, of which listed are listed.
    if (vx.count - listed) * 4 > listed + 256 then
        delayq_values_sweep(vx, DELAYQ_SWEEP_FIELDS)
    end
    redis.call('hset', vx.key, '@seq', vx.seq, '@d', d, '@n', vx.count, '@gc', vx.gc, '@w', vx.recent,
        '@x', vx.excess)
    vx.listed, vx.complete = listed, listed >= n
    return vx.complete
end

-- Reads the order list from position from to its end (before the script writes anything) for the
-- entries carrying one of keys (kind 'value': values; 'id': ids): vx.rest[key] lists them, in
-- list order.
local function delayq_values_read_rest(vx, from, kind, keys)
    local hits = {}
    for _, key in ipairs(keys) do
        hits[key] = {}
    end
    -- A few values: each is compared with the end of each entry (which is where a value sits in
    -- both formats) before anything is unpacked.
    local by_end = kind == 'value' and #keys < DELAYQ_REST_UNPACK_FROM
    local pos = from
    while true do
        local slice = redis.call('lrange', vx.order, pos, pos + DELAYQ_REST_SLICE - 1)
        for _, entry in ipairs(slice) do
            local key
            if kind == 'id' then
                key = string.sub(entry, 1, DELAYQ_ID_LEN)
            elseif by_end then
                for _, value in ipairs(keys) do
                    if #entry > #value and string.find(entry, value, #entry - #value + 1, true)
                        and delayq_value(entry, vx.legacy) == value then
                        key = value
                        break
                    end
                end
            else
                key = delayq_value(entry, vx.legacy)
            end
            local found = key and hits[key]
            if found then
                found[#found + 1] = entry
            end
        end
        if #slice < DELAYQ_REST_SLICE then
            break
        end
        pos = pos + #slice
    end
    vx.rest = hits
end

local function delayq_values_ready(vx, budget, rest_max, kind, keys)
    if delayq_values_sync(vx, budget) then
        return true
    end
    vx.uncovered = redis.call('llen', vx.order) - vx.listed
    if vx.uncovered > rest_max then
        return false
    end
    delayq_values_read_rest(vx, vx.listed, kind, keys)
    return true
end

-- The reply of a lookup whose index was not ready: { 0, the elements it does not cover yet }.
local function delayq_values_not_ready(vx)
    return { 0, vx.uncovered or 0 }
end
