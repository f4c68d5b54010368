-- delayq lib/entry.lua: pending entries, packed with Redis's bundled `struct` library as Redisson
-- packs them:
--   current (Redisson >= 3.21.1): struct.pack('Bc0Lc0', #id, id, #value, value)
--   legacy  (Redisson <  3.21.1): struct.pack('dLc0', random, #value, value)
-- Every script gets the queue's entry format as ARGV[2]: '0' current, '1' legacy; new entries are
-- written in it, and it is the reading preferred for an entry that fits both.
--
-- delayq_value(entry, legacy): the value bytes, or nil when the entry is neither format (a
-- malformed entry is never unpacked with a bare struct.unpack, which would abort the script
-- part-way and leave earlier writes done).
-- delayq_pack(legacy, id, value): a new entry; id is 8 random bytes, or (legacy) a random long
-- as decimal text.
-- delayq_index_member(entry): the entry's member in the position index (its first 9 bytes,
-- which hold the random id).
local function delayq_read_current(entry)
    local ok, _, value, next_pos = pcall(struct.unpack, 'Bc0Lc0', entry)
    if ok and next_pos == #entry + 1 then
        return value
    end
    return nil
end

local function delayq_read_legacy(entry)
    if #entry < 16 then
        return nil
    end
    local ok, _, value, next_pos = pcall(struct.unpack, 'dLc0', entry)
    if ok and next_pos == #entry + 1 then
        return value
    end
    return nil
end

local function delayq_value(entry, legacy)
    if legacy then
        return delayq_read_legacy(entry) or delayq_read_current(entry)
    end
    return delayq_read_current(entry) or delayq_read_legacy(entry)
end

local function delayq_pack(legacy, id, value)
    if legacy then
        return struct.pack('dLc0', tonumber(id), string.len(value), value)
    end
    return struct.pack('Bc0Lc0', string.len(id), id, string.len(value), value)
end

local function delayq_index_member(entry)
    return string.sub(entry, 1, 9)
end
