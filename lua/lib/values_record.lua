-- delayq lib/values_record.lua: the records of the value index (delayq_values:{NAME}, a hash),
-- which finds the pending entries that carry a value, or an id, without reading the order list.
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
-- The index is built and checked in lib/values_sync.lua, read in lib/values_lookup.lua and kept
-- in step with the scripts' writes in lib/values_step.lua; this file holds what they share: the
-- record formats (delayq_values_digest, delayq_values_tuples, delayq_values_pack_tuples,
-- delayq_values_write), batched HMGET/HSET (delayq_values_hmget, delayq_values_hset_all), and
-- delayq_values_forget_id(vx, entry): one occurrence of entry's id leaves its value's digest.
local DELAYQ_TUPLE = '>dBI4'
local DELAYQ_TUPLE_HEAD = 13
local DELAYQ_ID_LEN = 9
local DELAYQ_ARGS_CHUNK = 500

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
