-- delayq lib/item.lua: the keys one per limit key (delayq_limit_parked:{NAME}:KEY, ...).
--
-- The key of KEY under PREFIX is PREFIX .. ':' .. KEY with '%' written '%25' and ':' written
-- '%3A' (the names src/keys/mod.rs's item_key writes), so that no key of the queue NAME is also
-- a key of a queue named '{NAME}:...', whose keys start with the same 'PREFIX:{NAME}:'. Before
-- issue 38 KEY was written as it is: a list of values held back under that name is still taken.
-- delayq_item_key(prefix, key): the key's name.
-- delayq_item_legacy(prefix, key): the name before issue 38 when it differs (KEY holds '%' or
-- ':'), else nil.
-- delayq_item_claimed(held, key): whether the name before issue 38 of KEY (under a queue whose
-- zset of keys, or of schedules, is `held`) is the name now of another key's (see below).
-- delayq_item_legacy_list(prefix, held, key): the name before issue 38 of KEY's list of values
-- held back when a list of that name is there for KEY to take (see below), else nil.
-- delayq_item_list(prefix, held, key): the name of KEY's list of values held back, after moving
-- the values of a list under the name before issue 38 to its head (held back earlier: they
-- stay ahead), unless that name is also the name of a list another key may own now: some
-- key of this queue or of a queue '{NAME}:...' named so is held back (a member of its zset of
-- keys held back, `held` .. ':...'), and the list is left to it.

local delayq_item_escapes = { ['%'] = '%25', [':'] = '%3A' }

local function delayq_item_key(prefix, key)
    return prefix .. ':' .. (string.gsub(key, '[%%:]', delayq_item_escapes))
end

local function delayq_item_legacy(prefix, key)
    if string.find(key, '[%%:]') then
        return prefix .. ':' .. key
    end
    return nil
end

-- The key whose name (under the same prefix) a suffix is, or nil when it holds ':' or a '%'
-- that starts neither '%25' nor '%3A'.
local function delayq_item_unescape(suffix)
    if string.find(suffix, ':', 1, true) then
        return nil
    end
    local valid = true
    local key = string.gsub(suffix, '%%(.?.?)', function(code)
        if code == '25' then
            return '%'
        elseif code == '3A' then
            return ':'
        end
        valid = false
    end)
    return valid and key or nil
end

-- Whether the list `legacy` (the name before issue 38 of `key`'s list) is also the list of a key
-- held back now under the current names: `key` read as a suffix of this queue's, or split at
-- its last ':' into a queue '{NAME}:...' and a suffix of that queue's.
local function delayq_item_claimed(held, key)
    local own = delayq_item_unescape(key)
    if own and redis.call('zscore', held, own) then
        return true
    end
    local queue, suffix = string.match(key, '^(.*):([^:]*)$')
    local other = suffix and delayq_item_unescape(suffix)
    return other ~= nil and redis.call('zscore', held .. ':' .. queue, other) ~= false
end

local function delayq_item_legacy_list(prefix, held, key)
    local legacy = delayq_item_legacy(prefix, key)
    if not legacy or redis.call('type', legacy).ok ~= 'list' then
        return nil
    end
    if delayq_item_claimed(held, key) then
        return nil
    end
    return legacy
end

local function delayq_item_list(prefix, held, key)
    local list = delayq_item_key(prefix, key)
    local legacy = delayq_item_legacy_list(prefix, held, key)
    if legacy then
        if redis.call('exists', list) == 0 then
            redis.call('rename', legacy, list)
        else
            while redis.call('rpoplpush', legacy, list) do
            end
        end
    end
    return list
end
