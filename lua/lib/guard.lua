-- delayq lib/guard.lua: refuse a call on a key of the wrong type before anything is written.
--
-- delayq_check_keys(kinds): kinds names, in KEYS order, the type each key must have: 'list',
-- 'zset', 'hash'; or 'channel' (not a key) and 'any' (a key the script leaves untouched, declared
-- only to route the call to the queue's slot), which are never checked. src/redis/script.rs calls it before
-- every script body with the types of the roles the Rust side declares for the script, so a
-- WRONGTYPE error can never come half-way through a script and leave earlier writes done. A key
-- that does not exist passes.
local function delayq_check_keys(kinds)
    for i, kind in ipairs(kinds) do
        if kind ~= 'channel' and kind ~= 'any' then
            local found = redis.call('type', KEYS[i]).ok
            if found ~= 'none' and found ~= kind then
                return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value (delayq: key \''
                    .. KEYS[i] .. '\' is a ' .. found .. ', not a ' .. kind .. ')')
            end
        end
    end
    return nil
end
