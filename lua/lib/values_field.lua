-- delayq lib/values_field.lua: where the value index (delayq_values:{NAME}, lib/values_record.lua) keeps
-- an entry's record, for the scripts that only need to know whether the index is behind the
-- order list.
--
-- delayq_values_field(entry): the hash field of the entry's record ('i' and the entry's first 9
-- bytes, its id).
-- delayq_values_behind(order, values): 1 when the value index exists and the order list's tail
-- entry has no tuple in it (entries were appended since the index was last brought up to date),
-- else 0.
local function delayq_values_field(entry)
    return 'i' .. delayq_index_member(entry)
end

local function delayq_values_behind(order, values)
    if redis.call('exists', values) == 0 then
        return 0
    end
    local tail = redis.call('lindex', order, -1)
    if not tail then
        return 0
    end
    local record = redis.call('hget', values, delayq_values_field(tail))
    -- A record holds its tuples' entries verbatim.
    if record and string.find(record, tail, 1, true) then
        return 0
    end
    return 1
end
