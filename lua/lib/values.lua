-- delayq lib/values.lua: the value index (delayq_values:{NAME}, a hash), which finds the pending
-- entries that carry a value, or an id, without reading the order list.
--
-- Fields:
--   'i' .. ID     the order-list entries whose first 9 bytes are ID (the id-length byte and the 8
--                 random bytes; for a legacy entry the random double and the first length byte),
--                 one tuple per list element: struct '>dBI4' (seq, trusted, entry length), then
--                 the entry. Two tuples share an ID only when identical entries sit in the list
--                 twice (a Java offer retried after a lost reply), or ids collide.
--   'v' .. DIGEST the IDs (9 bytes each, once per tuple) of the entries whose value has this
--                 DIGEST (the value itself up to 24 bytes, else the first 16 hex digits of its
--                 SHA-1), in seq order.
--   '@seq'        the next seq; '@d' LLEN(order) - ZCARD(timeout) when delayq last saw the queue;
--   '@x'          how much of a rise of LLEN - ZCARD since is not yet accounted for by irregular
--                 entries indexed at the tail;
--   '@n'          the number of tuples; '@gc' the HSCAN cursor of the sweep that drops the tuples of
--                 entries gone;
--   '@w'          the last entries indexed (struct '>d' seq, then the ID; at most 8).
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
--     which holds Redis long. A lookup need not wait for the rest: when what the index does not
--     cover yet is short enough for the caller, the call reads it once (LRANGE slices, before
--     any write) for the entries the lookup is after.
--
-- delayq_values_open(timeout, order, values, legacy): the handle the functions below take.
-- delayq_values_ready(vx, budget, rest_max, kind, keys): indexes at most budget entries; true
--   when lookups may follow in this call: the index is complete, or the order list's elements it
--   does not cover are at most rest_max, and have just been read for the entries carrying one of
--   keys (kind 'value': codec-encoded values; 'id': ids, the first 9 bytes of an entry).
-- delayq_values_by_value(vx, value) / delayq_values_by_id(vx, id): candidate tuples
--   ({ seq, trusted, entry }) in list order (the ones read in the rest last, untrusted);
--   delayq_values_alive(vx, candidates): which are still in the order list (a list of booleans).
-- delayq_values_unlist(vx, tuple): LREM of its entry, from the end of the list nearer to it;
--   returns LREM's count and the elements it is expected to have scanned.
-- delayq_values_drop(vx, tuple), delayq_values_add(vx, entry): keep the index in step with a
--   removal or an entry just appended (an entry appended to a list the index does not cover
--   completely is left for a later call to index, in list order).
-- delayq_values_commit(vx): after the script's writes: notes LLEN - ZCARD, follows the list's
--   time to live.
local DELAYQ_TUPLE = '>dBI4'
local DELAYQ_TUPLE_HEAD = 13
local DELAYQ_ID_LEN = 9
local DELAYQ_ARGS_CHUNK = 500
local DELAYQ_WATERMARKS = 8
local DELAYQ_SLICE = 200
local DELAYQ_VALUES_CALL_US = 3000
local DELAYQ_SWEEP_FIELDS = 400
local DELAYQ_WATERMARK_LEN = 8 + DELAYQ_ID_LEN
local DELAYQ_REST_SLICE = 1000
-- Looked-up values from which the rest is read by unpacking each entry rather than by comparing
-- each value with each entry's end.
local DELAYQ_REST_UNPACK_FROM = 4

local function delayq_values_digest(value)
    if #value <= 24 then
        -- Short values name themselves (cheaper than hashing; a clash with a digest only
        -- lengthens a candidate list, the value itself decides).
        return 'v' .. value
    end
    return 'v' .. string.sub(redis.sha1hex(value), 1, 16)
end

local function delayq_values_tuples(record)
    local out, pos = {}, 1
    if not record then
        return out
    end
    while pos <= #record do
        local ok, seq, trusted, len = pcall(struct.unpack, DELAYQ_TUPLE, record, pos)
        if not ok or pos + DELAYQ_TUPLE_HEAD + len - 1 > #record then
            error('delayq: a record of the value index is corrupt; delete the delayq_values key (it is rebuilt)')
        end
        pos = pos + DELAYQ_TUPLE_HEAD
        out[#out + 1] = { seq = seq, trusted = trusted == 1, entry = string.sub(record, pos, pos + len - 1) }
        pos = pos + len
    end
    return out
end

local function delayq_values_pack_tuples(tuples)
    local parts = {}
    for i, t in ipairs(tuples) do
        parts[i] = struct.pack(DELAYQ_TUPLE, t.seq, t.trusted and 1 or 0, #t.entry) .. t.entry
    end
    return table.concat(parts)
end

-- HMGET of many fields, a chunk of arguments at a time; missing fields are false.
local function delayq_values_hmget(key, fields)
    local out = {}
    for i = 1, #fields, DELAYQ_ARGS_CHUNK do
        local part = redis.call('hmget', key, unpack(fields, i, math.min(i + DELAYQ_ARGS_CHUNK - 1, #fields)))
        for j = 1, #part do
            out[i + j - 1] = part[j]
        end
    end
    return out
end

local function delayq_values_hset_all(key, args)
    for i = 1, #args, DELAYQ_ARGS_CHUNK * 2 do
        redis.call('hset', key, unpack(args, i, math.min(i + DELAYQ_ARGS_CHUNK * 2 - 1, #args)))
    end
end

local function delayq_values_write(vx, field, tuples)
    if #tuples == 0 then
        redis.call('hdel', vx.key, field)
    else
        redis.call('hset', vx.key, field, delayq_values_pack_tuples(tuples))
    end
end

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

-- Removes one occurrence of entry's id from the list of its value's digest.
local function delayq_values_forget_id(vx, entry)
    local value = delayq_value(entry, vx.legacy)
    if not value then
        return
    end
    local field = delayq_values_digest(value)
    local ids = redis.call('hget', vx.key, field)
    if not ids then
        return
    end
    local id = string.sub(entry, 1, DELAYQ_ID_LEN)
    for pos = 1, #ids, DELAYQ_ID_LEN do
        if string.sub(ids, pos, pos + DELAYQ_ID_LEN - 1) == id then
            ids = string.sub(ids, 1, pos - 1) .. string.sub(ids, pos + DELAYQ_ID_LEN)
            if #ids == 0 then
                redis.call('hdel', vx.key, field)
            else
                redis.call('hset', vx.key, field, ids)
            end
            return
        end
    end
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

-- Adds to candidates (indexed tuples) the entries read in the rest for key, as untrusted tuples
-- with seqs after every indexed one. An indexed entry with a copy in the rest is untrusted too:
-- which copies are still listed is then counted in the list itself.
local function delayq_values_with_rest(vx, candidates, key)
    local found = vx.rest and vx.rest[key]
    if not found or #found == 0 then
        return candidates
    end
    local in_rest = {}
    for _, entry in ipairs(found) do
        in_rest[entry] = true
    end
    for _, t in ipairs(candidates) do
        if in_rest[t.entry] then
            t.trusted = false
        end
    end
    for i, entry in ipairs(found) do
        candidates[#candidates + 1] = { seq = vx.seq + i - 1, trusted = false, entry = entry, unindexed = true }
    end
    return candidates
end

local function delayq_values_sorted(tuples)
    table.sort(tuples, function(a, b)
        return a.seq < b.seq
    end)
    return tuples
end

local function delayq_values_indexed_by_value(vx, value)
    local out = {}
    local ids = redis.call('hget', vx.key, delayq_values_digest(value))
    if not ids then
        return out
    end
    local fields, seen = {}, {}
    for pos = 1, #ids, DELAYQ_ID_LEN do
        local field = 'i' .. string.sub(ids, pos, pos + DELAYQ_ID_LEN - 1)
        if not seen[field] then
            seen[field] = true
            fields[#fields + 1] = field
        end
    end
    for _, record in ipairs(delayq_values_hmget(vx.key, fields)) do
        for _, t in ipairs(delayq_values_tuples(record or nil)) do
            -- The digest only narrows the search: the value itself decides.
            if delayq_value(t.entry, vx.legacy) == value then
                out[#out + 1] = t
            end
        end
    end
    return delayq_values_sorted(out)
end

local function delayq_values_by_value(vx, value)
    return delayq_values_with_rest(vx, delayq_values_indexed_by_value(vx, value), value)
end

local function delayq_values_by_id(vx, id)
    local indexed = delayq_values_sorted(delayq_values_tuples(redis.call('hget', vx.key, 'i' .. id) or nil))
    return delayq_values_with_rest(vx, indexed, id)
end

-- For each candidate (in list order), whether its entry is still in the order list. A trusted one
-- by its zset member; an untrusted one by counting the copies of its entry in the list: when
-- there are fewer copies than tuples, the earliest tuples are the ones gone (Redisson and delayq
-- remove the first copy of an entry).
local function delayq_values_alive(vx, candidates)
    local out, gone_before = {}, {}
    for i, t in ipairs(candidates) do
        if t.trusted then
            out[i] = redis.call('zscore', vx.timeout, t.entry) ~= false
        else
            if gone_before[t.entry] == nil then
                local tuples = 0
                for _, other in ipairs(candidates) do
                    if other.entry == t.entry then
                        tuples = tuples + 1
                    end
                end
                local copies = #redis.call('lpos', vx.order, t.entry, 'count', 0)
                gone_before[t.entry] = tuples - copies
            end
            out[i] = gone_before[t.entry] <= 0
            gone_before[t.entry] = gone_before[t.entry] - 1
        end
    end
    return out
end

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
