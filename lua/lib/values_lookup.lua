-- delayq lib/values_lookup.lua: finding the pending entries that carry a value, or an id, in the
-- value index (lib/values_record.lua) once lib/values_sync.lua made it ready.
--
-- delayq_values_by_value(vx, value) / delayq_values_by_id(vx, id): candidate tuples
--   ({ seq, trusted, entry }) in list order (the ones read in the rest last, untrusted).
-- delayq_values_alive(vx, candidates): which are still in the order list (a list of booleans).
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
