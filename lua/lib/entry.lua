-- delayq: shared prelude, prepended (by src/scripts.rs) to every script that reads entries.
--
-- Entries are packed with Redis's bundled `struct` library, as Redisson does:
--   current (Redisson >= 3.21.1): struct.pack('Bc0Lc0', #id, id, #value, value)
--   legacy  (Redisson <  3.21.1): struct.pack('dLc0', random, #value, value)
-- delayq_wrong_type(key, kind, ...) names the first key that exists with another type than its
-- kind ('list', 'zset'), so a script can refuse before writing anything (a WRONGTYPE error
-- half-way would leave earlier writes done).
-- delayq_value(entry, prefer_legacy) returns the value bytes, or nil when the entry is neither
-- (a malformed entry is never unpacked with a bare struct.unpack, which would abort the script
-- part-way and leave earlier writes done).
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

local function delayq_value(entry, prefer_legacy)
    if prefer_legacy then
        return delayq_read_legacy(entry) or delayq_read_current(entry)
    end
    return delayq_read_current(entry) or delayq_read_legacy(entry)
end

local function delayq_wrong_type(...)
    local args = { ... }
    for i = 1, #args, 2 do
        local found = redis.call('type', args[i]).ok
        if found ~= 'none' and found ~= args[i + 1] then
            return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value: '
                .. args[i] .. ' is a ' .. found .. ', not a ' .. args[i + 1])
        end
    end
    return nil
end
